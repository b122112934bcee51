from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar
from uuid import UUID

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from typing_extensions import Self

from ..models.task_status import TaskStatus

T = TypeVar("T", bound="ChildTask")


@_attrs_define
class ChildTask:
    """A child task, as its parent lists it.

    Attributes:
        status (TaskStatus):
        step_id (str): The parent's step that started it.
        task_id (UUID):
    """

    status: TaskStatus
    step_id: str
    task_id: UUID
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        status = self.status.value

        step_id = self.step_id

        task_id = str(self.task_id)

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "status": status,
                "step_id": step_id,
                "task_id": task_id,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        status = TaskStatus(d.pop("status"))

        step_id = d.pop("step_id")

        task_id = UUID(d.pop("task_id"))

        child_task = cls(
            status=status,
            step_id=step_id,
            task_id=task_id,
        )

        child_task.additional_properties = d
        return child_task

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
