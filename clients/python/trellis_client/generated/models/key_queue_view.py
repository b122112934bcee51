from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from typing_extensions import Self

T = TypeVar("T", bound="KeyQueueView")


@_attrs_define
class KeyQueueView:
    """One concurrency key's queue in [`ActivityView`].

    Attributes:
        key (str): The concurrency key (`""` for tasks without one; `others` sums the keys past the top 20).
        ready (int):
        running (int):
    """

    key: str
    ready: int
    running: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        key = self.key

        ready = self.ready

        running = self.running

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "key": key,
                "ready": ready,
                "running": running,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        key = d.pop("key")

        ready = d.pop("ready")

        running = d.pop("running")

        key_queue_view = cls(
            key=key,
            ready=ready,
            running=running,
        )

        key_queue_view.additional_properties = d
        return key_queue_view

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
