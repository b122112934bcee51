from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from typing_extensions import Self

from ..types import UNSET, Unset

T = TypeVar("T", bound="TenantInput")


@_attrs_define
class TenantInput:
    """`PUT /tenants/{tenant}`.

    Attributes:
        max_running_steps (int | None | Unset): Its running steps at once, across every worker (absent: the default).
        max_running_tasks (int | None | Unset): Its tasks with running steps at once, across every worker (absent: the
            default).
    """

    max_running_steps: int | None | Unset = UNSET
    max_running_tasks: int | None | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
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

        field_dict.update({})
        if max_running_steps is not UNSET:
            field_dict["max_running_steps"] = max_running_steps
        if max_running_tasks is not UNSET:
            field_dict["max_running_tasks"] = max_running_tasks

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)

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

        tenant_input = cls(
            max_running_steps=max_running_steps,
            max_running_tasks=max_running_tasks,
        )

        return tenant_input
