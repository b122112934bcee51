from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from typing_extensions import Self

T = TypeVar("T", bound="QueueView")


@_attrs_define
class QueueView:
    """One tool's queue in [`ActivityView`].

    Attributes:
        oldest_ready_secs (float): Seconds the oldest ready step of the tool has waited (0 when none is ready).
        ready (int):
        running (int):
        tool (str):
    """

    oldest_ready_secs: float
    ready: int
    running: int
    tool: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        oldest_ready_secs = self.oldest_ready_secs

        ready = self.ready

        running = self.running

        tool = self.tool

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "oldest_ready_secs": oldest_ready_secs,
                "ready": ready,
                "running": running,
                "tool": tool,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        oldest_ready_secs = d.pop("oldest_ready_secs")

        ready = d.pop("ready")

        running = d.pop("running")

        tool = d.pop("tool")

        queue_view = cls(
            oldest_ready_secs=oldest_ready_secs,
            ready=ready,
            running=running,
            tool=tool,
        )

        queue_view.additional_properties = d
        return queue_view

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
