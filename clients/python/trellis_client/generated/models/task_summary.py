from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, TypeVar
from uuid import UUID

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from typing_extensions import Self

from ..models.task_status import TaskStatus

T = TypeVar("T", bound="TaskSummary")


@_attrs_define
class TaskSummary:
    """One line of `GET /tasks`.

    Attributes:
        created_at (datetime.datetime):
        description (str):
        status (TaskStatus):
        task_id (UUID):
        updated_at (datetime.datetime):
    """

    created_at: datetime.datetime
    description: str
    status: TaskStatus
    task_id: UUID
    updated_at: datetime.datetime
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        created_at = self.created_at.isoformat()

        description = self.description

        status = self.status.value

        task_id = str(self.task_id)

        updated_at = self.updated_at.isoformat()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "created_at": created_at,
                "description": description,
                "status": status,
                "task_id": task_id,
                "updated_at": updated_at,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))

        description = d.pop("description")

        status = TaskStatus(d.pop("status"))

        task_id = UUID(d.pop("task_id"))

        updated_at = datetime.datetime.fromisoformat(d.pop("updated_at"))

        task_summary = cls(
            created_at=created_at,
            description=description,
            status=status,
            task_id=task_id,
            updated_at=updated_at,
        )

        task_summary.additional_properties = d
        return task_summary

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
