from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from typing_extensions import Self

if TYPE_CHECKING:
    from ..models.submit_task import SubmitTask


T = TypeVar("T", bound="SubmitBatch")


@_attrs_define
class SubmitBatch:
    """`POST /tasks/batch`: up to 1000 submit bodies.

    Attributes:
        tasks (list[SubmitTask]):
    """

    tasks: list[SubmitTask]

    def to_dict(self) -> dict[str, Any]:
        tasks = []
        for tasks_item_data in self.tasks:
            tasks_item = tasks_item_data.to_dict()
            tasks.append(tasks_item)

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "tasks": tasks,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.submit_task import SubmitTask

        d = dict(src_dict)
        tasks = []
        _tasks = d.pop("tasks")
        for tasks_item_data in _tasks:
            tasks_item = SubmitTask.from_dict(tasks_item_data)

            tasks.append(tasks_item)

        submit_batch = cls(
            tasks=tasks,
        )

        return submit_batch
