from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from typing_extensions import Self

T = TypeVar("T", bound="MapProgress")


@_attrs_define
class MapProgress:
    """How far an expanded map step's items are.

    Attributes:
        ended (int): Items that succeeded or were given up.
        given_up (int): Items given up (`on_item_failure: continue`).
        total (int): Items in the map's list.
    """

    ended: int
    given_up: int
    total: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        ended = self.ended

        given_up = self.given_up

        total = self.total

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "ended": ended,
                "given_up": given_up,
                "total": total,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        ended = d.pop("ended")

        given_up = d.pop("given_up")

        total = d.pop("total")

        map_progress = cls(
            ended=ended,
            given_up=given_up,
            total=total,
        )

        map_progress.additional_properties = d
        return map_progress

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
