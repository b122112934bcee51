from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from typing_extensions import Self

from ..types import UNSET, Unset

T = TypeVar("T", bound="KeyLimitInput")


@_attrs_define
class KeyLimitInput:
    """`PUT /key-limits/{pattern}`.

    Attributes:
        max_running (int | None | Unset): Steps of one key's tasks running at once, across every worker (each key that
            matches
            has its own count; absent: no cap). It applies to tasks submitted after the pattern
            exists; a new value applies at once.
        weight (float | None | Unset): The keys' share of the claim, against other keys' (default 1; from 0.001 to
            1000).
    """

    max_running: int | None | Unset = UNSET
    weight: float | None | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        max_running: int | None | Unset
        if isinstance(self.max_running, Unset):
            max_running = UNSET
        else:
            max_running = self.max_running

        weight: float | None | Unset
        if isinstance(self.weight, Unset):
            weight = UNSET
        else:
            weight = self.weight

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if max_running is not UNSET:
            field_dict["max_running"] = max_running
        if weight is not UNSET:
            field_dict["weight"] = weight

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)

        def _parse_max_running(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        max_running = _parse_max_running(d.pop("max_running", UNSET))

        def _parse_weight(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        weight = _parse_weight(d.pop("weight", UNSET))

        key_limit_input = cls(
            max_running=max_running,
            weight=weight,
        )

        return key_limit_input
