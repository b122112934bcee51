from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from typing_extensions import Self

if TYPE_CHECKING:
    from ..models.callback_fail_error import CallbackFailError


T = TypeVar("T", bound="CallbackFail")


@_attrs_define
class CallbackFail:
    """`POST /callbacks/{token}/fail`.

    Attributes:
        error (CallbackFailError): As an HTTP tool's error: `{"message", "category", "retryable", "hints"}`.
    """

    error: CallbackFailError

    def to_dict(self) -> dict[str, Any]:
        error = self.error.to_dict()

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "error": error,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.callback_fail_error import CallbackFailError

        d = dict(src_dict)
        error = CallbackFailError.from_dict(d.pop("error"))

        callback_fail = cls(
            error=error,
        )

        return callback_fail
