from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from typing_extensions import Self

from ..types import UNSET, Unset

T = TypeVar("T", bound="Tenant")


@_attrs_define
class Tenant:
    """One tenant's own caps.

    Attributes:
        tenant (str):
        updated_at (datetime.datetime):
        max_running_steps (int | None | Unset): Its running steps at once (none: `[tenants] max_running_steps`).
        max_running_tasks (int | None | Unset): Its tasks with running steps at once (none: `[tenants]
            max_running_tasks`).
    """

    tenant: str
    updated_at: datetime.datetime
    max_running_steps: int | None | Unset = UNSET
    max_running_tasks: int | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        tenant = self.tenant

        updated_at = self.updated_at.isoformat()

        max_running_steps: int | None | Unset
        if isinstance(self.max_running_steps, Unset):
            max_running_steps = UNSET
        else:
            max_running_steps = self.max_running_steps

        max_running_tasks: int | None | Unset
        if isinstance(self.max_running_tasks, Unset):
            max_running_tasks = UNSET
        else:
            max_running_tasks = self.max_running_tasks

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "tenant": tenant,
                "updated_at": updated_at,
            }
        )
        if max_running_steps is not UNSET:
            field_dict["max_running_steps"] = max_running_steps
        if max_running_tasks is not UNSET:
            field_dict["max_running_tasks"] = max_running_tasks

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        tenant = d.pop("tenant")

        updated_at = datetime.datetime.fromisoformat(d.pop("updated_at"))

        def _parse_max_running_steps(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        max_running_steps = _parse_max_running_steps(d.pop("max_running_steps", UNSET))

        def _parse_max_running_tasks(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        max_running_tasks = _parse_max_running_tasks(d.pop("max_running_tasks", UNSET))

        tenant = cls(
            tenant=tenant,
            updated_at=updated_at,
            max_running_steps=max_running_steps,
            max_running_tasks=max_running_tasks,
        )

        tenant.additional_properties = d
        return tenant

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
