from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from typing_extensions import Self

T = TypeVar("T", bound="CountersView")


@_attrs_define
class CountersView:
    """The recovery counters of a task (and of its current step).

    Attributes:
        consecutive_failures (int):
        single_step_repair_count (int):
        step_retry_count (int):
        task_replan_count (int):
    """

    consecutive_failures: int
    single_step_repair_count: int
    step_retry_count: int
    task_replan_count: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        consecutive_failures = self.consecutive_failures

        single_step_repair_count = self.single_step_repair_count

        step_retry_count = self.step_retry_count

        task_replan_count = self.task_replan_count

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "consecutive_failures": consecutive_failures,
                "single_step_repair_count": single_step_repair_count,
                "step_retry_count": step_retry_count,
                "task_replan_count": task_replan_count,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        consecutive_failures = d.pop("consecutive_failures")

        single_step_repair_count = d.pop("single_step_repair_count")

        step_retry_count = d.pop("step_retry_count")

        task_replan_count = d.pop("task_replan_count")

        counters_view = cls(
            consecutive_failures=consecutive_failures,
            single_step_repair_count=single_step_repair_count,
            step_retry_count=step_retry_count,
            task_replan_count=task_replan_count,
        )

        counters_view.additional_properties = d
        return counters_view

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
