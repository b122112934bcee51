from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from typing_extensions import Self

if TYPE_CHECKING:
    from ..models.callback_complete_output import CallbackCompleteOutput


T = TypeVar("T", bound="CallbackComplete")


@_attrs_define
class CallbackComplete:
    """`POST /callbacks/{token}/complete`.

    Attributes:
        output (CallbackCompleteOutput): The step's output.
    """

    output: CallbackCompleteOutput

    def to_dict(self) -> dict[str, Any]:
        output = self.output.to_dict()

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "output": output,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.callback_complete_output import CallbackCompleteOutput

        d = dict(src_dict)
        output = CallbackCompleteOutput.from_dict(d.pop("output"))

        callback_complete = cls(
            output=output,
        )

        return callback_complete
