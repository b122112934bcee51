from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar
from uuid import UUID

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from typing_extensions import Self

from ..models.task_status import TaskStatus

T = TypeVar("T", bound="Submitted")


@_attrs_define
class Submitted:
    """A task's id and status: the answer to a submit (`created` false when the idempotency key
    was already used: the existing task).

        Attributes:
            created (bool):
            status (TaskStatus):
            task_id (UUID):
    """

    created: bool
    status: TaskStatus
    task_id: UUID
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        created = self.created

        status = self.status.value

        task_id = str(self.task_id)

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "created": created,
                "status": status,
                "task_id": task_id,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        created = d.pop("created")

        status = TaskStatus(d.pop("status"))

        task_id = UUID(d.pop("task_id"))

        submitted = cls(
            created=created,
            status=status,
            task_id=task_id,
        )

        submitted.additional_properties = d
        return submitted

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
