from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from typing_extensions import Self

from ..types import UNSET, Unset

T = TypeVar("T", bound="CallbackHeartbeat")


@_attrs_define
class CallbackHeartbeat:
    """`POST /callbacks/{token}/heartbeat`.

    Attributes:
        extend_secs (float | None | Unset): The wait lasts this many more seconds from now (default: the worker's
            `async_timeout_secs`).
    """

    extend_secs: float | None | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        extend_secs: float | None | Unset
        if isinstance(self.extend_secs, Unset):
            extend_secs = UNSET
        else:
            extend_secs = self.extend_secs

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if extend_secs is not UNSET:
            field_dict["extend_secs"] = extend_secs

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)

        def _parse_extend_secs(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        extend_secs = _parse_extend_secs(d.pop("extend_secs", UNSET))

        callback_heartbeat = cls(
            extend_secs=extend_secs,
        )

        return callback_heartbeat
