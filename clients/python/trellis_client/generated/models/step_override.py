from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from typing_extensions import Self

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.step_override_parameters_type_0 import StepOverrideParametersType0


T = TypeVar("T", bound="StepOverride")


@_attrs_define
class StepOverride:
    """Overrides for one step in a [`ResumeRequest`] or a [`RerunRequest`].

    Attributes:
        parameters (None | StepOverrideParametersType0 | Unset): Merged into the step's parameters.
        tool (None | str | Unset): A registered tool id.
    """

    parameters: None | StepOverrideParametersType0 | Unset = UNSET
    tool: None | str | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        from ..models.step_override_parameters_type_0 import StepOverrideParametersType0

        parameters: dict[str, Any] | None | Unset
        if isinstance(self.parameters, Unset):
            parameters = UNSET
        elif isinstance(self.parameters, StepOverrideParametersType0):
            parameters = self.parameters.to_dict()
        else:
            parameters = self.parameters

        tool: None | str | Unset
        if isinstance(self.tool, Unset):
            tool = UNSET
        else:
            tool = self.tool

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if parameters is not UNSET:
            field_dict["parameters"] = parameters
        if tool is not UNSET:
            field_dict["tool"] = tool

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.step_override_parameters_type_0 import StepOverrideParametersType0

        d = dict(src_dict)

        def _parse_parameters(
            data: object,
        ) -> None | StepOverrideParametersType0 | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                parameters_type_0 = StepOverrideParametersType0.from_dict(data)

                return parameters_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | StepOverrideParametersType0 | Unset, data)

        parameters = _parse_parameters(d.pop("parameters", UNSET))

        def _parse_tool(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        tool = _parse_tool(d.pop("tool", UNSET))

        step_override = cls(
            parameters=parameters,
            tool=tool,
        )

        return step_override
