from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from typing_extensions import Self

if TYPE_CHECKING:
    from ..models.stats_view_steps import StatsViewSteps
    from ..models.stats_view_tasks import StatsViewTasks


T = TypeVar("T", bound="StatsView")


@_attrs_define
class StatsView:
    """`GET /stats`: tasks and steps by status.

    Attributes:
        steps (StatsViewSteps):
        tasks (StatsViewTasks):
    """

    steps: StatsViewSteps
    tasks: StatsViewTasks
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        steps = self.steps.to_dict()

        tasks = self.tasks.to_dict()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "steps": steps,
                "tasks": tasks,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.stats_view_steps import StatsViewSteps
        from ..models.stats_view_tasks import StatsViewTasks

        d = dict(src_dict)
        steps = StatsViewSteps.from_dict(d.pop("steps"))

        tasks = StatsViewTasks.from_dict(d.pop("tasks"))

        stats_view = cls(
            steps=steps,
            tasks=tasks,
        )

        stats_view.additional_properties = d
        return stats_view

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
