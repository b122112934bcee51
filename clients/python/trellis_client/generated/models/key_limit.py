from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from typing_extensions import Self

from ..types import UNSET, Unset

T = TypeVar("T", bound="KeyLimit")


@_attrs_define
class KeyLimit:
    """One key pattern's limits.

    Attributes:
        pattern (str):
        updated_at (datetime.datetime):
        weight (float):
        max_running (int | None | Unset): Steps of one key's tasks running at once, across every worker (none: no cap).
    """

    pattern: str
    updated_at: datetime.datetime
    weight: float
    max_running: int | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        pattern = self.pattern

        updated_at = self.updated_at.isoformat()

        weight = self.weight

        max_running: int | None | Unset
        if isinstance(self.max_running, Unset):
            max_running = UNSET
        else:
            max_running = self.max_running

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "pattern": pattern,
                "updated_at": updated_at,
                "weight": weight,
            }
        )
        if max_running is not UNSET:
            field_dict["max_running"] = max_running

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        pattern = d.pop("pattern")

        updated_at = datetime.datetime.fromisoformat(d.pop("updated_at"))

        weight = d.pop("weight")

        def _parse_max_running(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        max_running = _parse_max_running(d.pop("max_running", UNSET))

        key_limit = cls(
            pattern=pattern,
            updated_at=updated_at,
            weight=weight,
            max_running=max_running,
        )

        key_limit.additional_properties = d
        return key_limit

    @property
    def additional_keys(self) -> list[str]:
        return list(self.additional_properties.keys())

    def __getitem__(self, key: str) -> Any:
        return self.additional_properties[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self.additional_properties[key] = value

    def __delitem__(self, key: str) -> None:
        del self.additional_properties[key]

    def __contains__(self, key: str) -> bool:
        return key in self.additional_properties
