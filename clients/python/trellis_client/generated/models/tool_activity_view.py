from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from typing_extensions import Self

T = TypeVar("T", bound="ToolActivityView")


@_attrs_define
class ToolActivityView:
    """One tool's last hour in [`ActivityView`].

    Attributes:
        attempts (int):
        failed (int):
        mean_ms (float):
        median_ms (float):
        tool (str):
    """

    attempts: int
    failed: int
    mean_ms: float
    median_ms: float
    tool: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        attempts = self.attempts

        failed = self.failed

        mean_ms = self.mean_ms

        median_ms = self.median_ms

        tool = self.tool

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "attempts": attempts,
                "failed": failed,
                "mean_ms": mean_ms,
                "median_ms": median_ms,
                "tool": tool,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        attempts = d.pop("attempts")

        failed = d.pop("failed")

        mean_ms = d.pop("mean_ms")

        median_ms = d.pop("median_ms")

        tool = d.pop("tool")

        tool_activity_view = cls(
            attempts=attempts,
            failed=failed,
            mean_ms=mean_ms,
            median_ms=median_ms,
            tool=tool,
        )

        tool_activity_view.additional_properties = d
        return tool_activity_view

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
