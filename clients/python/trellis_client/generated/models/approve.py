from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from typing_extensions import Self

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.approve_parameters_type_0 import ApproveParametersType0


T = TypeVar("T", bound="Approve")


@_attrs_define
class Approve:
    """`POST /waits/{id}/approve`.

    Attributes:
        comment (None | str | Unset):
        parameters (ApproveParametersType0 | None | Unset): An `approval` step: the form's answer (checked against its
            `form`). A gated call: the
            parameters it runs with instead (checked against the tool's `input_schema`; recorded as
            the step's overrides).
    """

    comment: None | str | Unset = UNSET
    parameters: ApproveParametersType0 | None | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        from ..models.approve_parameters_type_0 import ApproveParametersType0

        comment: None | str | Unset
        if isinstance(self.comment, Unset):
            comment = UNSET
        else:
            comment = self.comment

        parameters: dict[str, Any] | None | Unset
        if isinstance(self.parameters, Unset):
            parameters = UNSET
        elif isinstance(self.parameters, ApproveParametersType0):
            parameters = self.parameters.to_dict()
        else:
            parameters = self.parameters

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if comment is not UNSET:
            field_dict["comment"] = comment
        if parameters is not UNSET:
            field_dict["parameters"] = parameters

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.approve_parameters_type_0 import ApproveParametersType0

        d = dict(src_dict)

        def _parse_comment(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        comment = _parse_comment(d.pop("comment", UNSET))

        def _parse_parameters(data: object) -> ApproveParametersType0 | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                parameters_type_0 = ApproveParametersType0.from_dict(data)

                return parameters_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(ApproveParametersType0 | None | Unset, data)

        parameters = _parse_parameters(d.pop("parameters", UNSET))

        approve = cls(
            comment=comment,
            parameters=parameters,
        )

        return approve
