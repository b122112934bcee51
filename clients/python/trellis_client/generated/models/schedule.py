from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast
from uuid import UUID

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from typing_extensions import Self

from ..models.schedule_overlap import ScheduleOverlap
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.schedule_input_type_0 import ScheduleInputType0
    from ..models.schedule_limits import ScheduleLimits
    from ..models.schedule_plan_type_0 import SchedulePlanType0


T = TypeVar("T", bound="Schedule")


@_attrs_define
class Schedule:
    """A schedule.

    Attributes:
        created_at (datetime.datetime):
        cron (str):
        description (str):
        enabled (bool):
        id (str):
        limits (ScheduleLimits):
        next_fire_times (list[datetime.datetime]): The next five ticks from now.
        overlap (ScheduleOverlap):
        priority (int):
        tenant (str): The tenant whose tasks its ticks submit.
        timezone (str):
        updated_at (datetime.datetime):
        input_ (None | ScheduleInputType0 | Unset):
        last_error (None | str | Unset): Why the last tick made no task (a template gone, an input it no longer takes).
        last_task_id (None | Unset | UUID):
        last_tick (datetime.datetime | None | Unset):
        next_fire_at (datetime.datetime | None | Unset): The next tick (null: paused, or no tick left).
        plan (None | SchedulePlanType0 | Unset):
        template (None | str | Unset):
    """

    created_at: datetime.datetime
    cron: str
    description: str
    enabled: bool
    id: str
    limits: ScheduleLimits
    next_fire_times: list[datetime.datetime]
    overlap: ScheduleOverlap
    priority: int
    tenant: str
    timezone: str
    updated_at: datetime.datetime
    input_: None | ScheduleInputType0 | Unset = UNSET
    last_error: None | str | Unset = UNSET
    last_task_id: None | Unset | UUID = UNSET
    last_tick: datetime.datetime | None | Unset = UNSET
    next_fire_at: datetime.datetime | None | Unset = UNSET
    plan: None | SchedulePlanType0 | Unset = UNSET
    template: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.schedule_input_type_0 import ScheduleInputType0
        from ..models.schedule_plan_type_0 import SchedulePlanType0

        created_at = self.created_at.isoformat()

        cron = self.cron

        description = self.description

        enabled = self.enabled

        id = self.id

        limits = self.limits.to_dict()

        next_fire_times = []
        for next_fire_times_item_data in self.next_fire_times:
            next_fire_times_item = next_fire_times_item_data.isoformat()
            next_fire_times.append(next_fire_times_item)

        overlap = self.overlap.value

        priority = self.priority

        tenant = self.tenant

        timezone = self.timezone

        updated_at = self.updated_at.isoformat()

        input_: dict[str, Any] | None | Unset
        if isinstance(self.input_, Unset):
            input_ = UNSET
        elif isinstance(self.input_, ScheduleInputType0):
            input_ = self.input_.to_dict()
        else:
            input_ = self.input_

        last_error: None | str | Unset
        if isinstance(self.last_error, Unset):
            last_error = UNSET
        else:
            last_error = self.last_error

        last_task_id: None | str | Unset
        if isinstance(self.last_task_id, Unset):
            last_task_id = UNSET
        elif isinstance(self.last_task_id, UUID):
            last_task_id = str(self.last_task_id)
        else:
            last_task_id = self.last_task_id

        last_tick: None | str | Unset
        if isinstance(self.last_tick, Unset):
            last_tick = UNSET
        elif isinstance(self.last_tick, datetime.datetime):
            last_tick = self.last_tick.isoformat()
        else:
            last_tick = self.last_tick

        next_fire_at: None | str | Unset
        if isinstance(self.next_fire_at, Unset):
            next_fire_at = UNSET
        elif isinstance(self.next_fire_at, datetime.datetime):
            next_fire_at = self.next_fire_at.isoformat()
        else:
            next_fire_at = self.next_fire_at

        plan: dict[str, Any] | None | Unset
        if isinstance(self.plan, Unset):
            plan = UNSET
        elif isinstance(self.plan, SchedulePlanType0):
            plan = self.plan.to_dict()
        else:
            plan = self.plan

        template: None | str | Unset
        if isinstance(self.template, Unset):
            template = UNSET
        else:
            template = self.template

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "created_at": created_at,
                "cron": cron,
                "description": description,
                "enabled": enabled,
                "id": id,
                "limits": limits,
                "next_fire_times": next_fire_times,
                "overlap": overlap,
                "priority": priority,
                "tenant": tenant,
                "timezone": timezone,
                "updated_at": updated_at,
            }
        )
        if input_ is not UNSET:
            field_dict["input"] = input_
        if last_error is not UNSET:
            field_dict["last_error"] = last_error
        if last_task_id is not UNSET:
            field_dict["last_task_id"] = last_task_id
        if last_tick is not UNSET:
            field_dict["last_tick"] = last_tick
        if next_fire_at is not UNSET:
            field_dict["next_fire_at"] = next_fire_at
        if plan is not UNSET:
            field_dict["plan"] = plan
        if template is not UNSET:
            field_dict["template"] = template

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.schedule_input_type_0 import ScheduleInputType0
        from ..models.schedule_limits import ScheduleLimits
        from ..models.schedule_plan_type_0 import SchedulePlanType0

        d = dict(src_dict)
        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))

        cron = d.pop("cron")

        description = d.pop("description")

        enabled = d.pop("enabled")

        id = d.pop("id")

        limits = ScheduleLimits.from_dict(d.pop("limits"))

        next_fire_times = []
        _next_fire_times = d.pop("next_fire_times")
        for next_fire_times_item_data in _next_fire_times:
            next_fire_times_item = datetime.datetime.fromisoformat(
                next_fire_times_item_data
            )

            next_fire_times.append(next_fire_times_item)

        overlap = ScheduleOverlap(d.pop("overlap"))

        priority = d.pop("priority")

        tenant = d.pop("tenant")

        timezone = d.pop("timezone")

        updated_at = datetime.datetime.fromisoformat(d.pop("updated_at"))

        def _parse_input_(data: object) -> None | ScheduleInputType0 | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                input_type_0 = ScheduleInputType0.from_dict(data)

                return input_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | ScheduleInputType0 | Unset, data)

        input_ = _parse_input_(d.pop("input", UNSET))

        def _parse_last_error(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        last_error = _parse_last_error(d.pop("last_error", UNSET))

        def _parse_last_task_id(data: object) -> None | Unset | UUID:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                last_task_id_type_0 = UUID(data)

                return last_task_id_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | Unset | UUID, data)

        last_task_id = _parse_last_task_id(d.pop("last_task_id", UNSET))

        def _parse_last_tick(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                last_tick_type_0 = datetime.datetime.fromisoformat(data)

                return last_tick_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        last_tick = _parse_last_tick(d.pop("last_tick", UNSET))

        def _parse_next_fire_at(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                next_fire_at_type_0 = datetime.datetime.fromisoformat(data)

                return next_fire_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        next_fire_at = _parse_next_fire_at(d.pop("next_fire_at", UNSET))

        def _parse_plan(data: object) -> None | SchedulePlanType0 | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                plan_type_0 = SchedulePlanType0.from_dict(data)

                return plan_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | SchedulePlanType0 | Unset, data)

        plan = _parse_plan(d.pop("plan", UNSET))

        def _parse_template(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        template = _parse_template(d.pop("template", UNSET))

        schedule = cls(
            created_at=created_at,
            cron=cron,
            description=description,
            enabled=enabled,
            id=id,
            limits=limits,
            next_fire_times=next_fire_times,
            overlap=overlap,
            priority=priority,
            tenant=tenant,
            timezone=timezone,
            updated_at=updated_at,
            input_=input_,
            last_error=last_error,
            last_task_id=last_task_id,
            last_tick=last_tick,
            next_fire_at=next_fire_at,
            plan=plan,
            template=template,
        )

        schedule.additional_properties = d
        return schedule

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
