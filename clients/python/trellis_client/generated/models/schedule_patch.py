from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from typing_extensions import Self

from ..models.schedule_overlap import ScheduleOverlap
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.limits import Limits
    from ..models.plan import Plan
    from ..models.schedule_patch_input_type_0 import SchedulePatchInputType0


T = TypeVar("T", bound="SchedulePatch")


@_attrs_define
class SchedulePatch:
    """`PATCH /schedules/{id}`: any field of the schedule; absent ones are kept.

    Attributes:
        cron (None | str | Unset):
        description (None | str | Unset):
        enabled (bool | None | Unset):
        input_ (None | SchedulePatchInputType0 | Unset):
        limits (Limits | None | Unset):
        overlap (ScheduleOverlap | Unset):
        plan (None | Plan | Unset):
        priority (int | None | Unset):
        template (None | str | Unset):
        timezone (None | str | Unset):
    """

    cron: None | str | Unset = UNSET
    description: None | str | Unset = UNSET
    enabled: bool | None | Unset = UNSET
    input_: None | SchedulePatchInputType0 | Unset = UNSET
    limits: Limits | None | Unset = UNSET
    overlap: ScheduleOverlap | Unset = UNSET
    plan: None | Plan | Unset = UNSET
    priority: int | None | Unset = UNSET
    template: None | str | Unset = UNSET
    timezone: None | str | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        from ..models.limits import Limits
        from ..models.plan import Plan
        from ..models.schedule_patch_input_type_0 import SchedulePatchInputType0

        cron: None | str | Unset
        if isinstance(self.cron, Unset):
            cron = UNSET
        else:
            cron = self.cron

        description: None | str | Unset
        if isinstance(self.description, Unset):
            description = UNSET
        else:
            description = self.description

        enabled: bool | None | Unset
        if isinstance(self.enabled, Unset):
            enabled = UNSET
        else:
            enabled = self.enabled

        input_: dict[str, Any] | None | Unset
        if isinstance(self.input_, Unset):
            input_ = UNSET
        elif isinstance(self.input_, SchedulePatchInputType0):
            input_ = self.input_.to_dict()
        else:
            input_ = self.input_

        limits: dict[str, Any] | None | Unset
        if isinstance(self.limits, Unset):
            limits = UNSET
        elif isinstance(self.limits, Limits):
            limits = self.limits.to_dict()
        else:
            limits = self.limits

        overlap: str | Unset = UNSET
        if not isinstance(self.overlap, Unset):
            overlap = self.overlap.value

        plan: dict[str, Any] | None | Unset
        if isinstance(self.plan, Unset):
            plan = UNSET
        elif isinstance(self.plan, Plan):
            plan = self.plan.to_dict()
        else:
            plan = self.plan

        priority: int | None | Unset
        if isinstance(self.priority, Unset):
            priority = UNSET
        else:
            priority = self.priority

        template: None | str | Unset
        if isinstance(self.template, Unset):
            template = UNSET
        else:
            template = self.template

        timezone: None | str | Unset
        if isinstance(self.timezone, Unset):
            timezone = UNSET
        else:
            timezone = self.timezone

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if cron is not UNSET:
            field_dict["cron"] = cron
        if description is not UNSET:
            field_dict["description"] = description
        if enabled is not UNSET:
            field_dict["enabled"] = enabled
        if input_ is not UNSET:
            field_dict["input"] = input_
        if limits is not UNSET:
            field_dict["limits"] = limits
        if overlap is not UNSET:
            field_dict["overlap"] = overlap
        if plan is not UNSET:
            field_dict["plan"] = plan
        if priority is not UNSET:
            field_dict["priority"] = priority
        if template is not UNSET:
            field_dict["template"] = template
        if timezone is not UNSET:
            field_dict["timezone"] = timezone

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.limits import Limits
        from ..models.plan import Plan
        from ..models.schedule_patch_input_type_0 import SchedulePatchInputType0

        d = dict(src_dict)

        def _parse_cron(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        cron = _parse_cron(d.pop("cron", UNSET))

        def _parse_description(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        description = _parse_description(d.pop("description", UNSET))

        def _parse_enabled(data: object) -> bool | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(bool | None | Unset, data)

        enabled = _parse_enabled(d.pop("enabled", UNSET))

        def _parse_input_(data: object) -> None | SchedulePatchInputType0 | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                input_type_0 = SchedulePatchInputType0.from_dict(data)

                return input_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | SchedulePatchInputType0 | Unset, data)

        input_ = _parse_input_(d.pop("input", UNSET))

        def _parse_limits(data: object) -> Limits | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                limits_type_0 = Limits.from_dict(data)

                return limits_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(Limits | None | Unset, data)

        limits = _parse_limits(d.pop("limits", UNSET))

        _overlap = d.pop("overlap", UNSET)
        overlap: ScheduleOverlap | Unset
        if isinstance(_overlap, Unset):
            overlap = UNSET
        else:
            overlap = ScheduleOverlap(_overlap)

        def _parse_plan(data: object) -> None | Plan | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                plan_type_0 = Plan.from_dict(data)

                return plan_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | Plan | Unset, data)

        plan = _parse_plan(d.pop("plan", UNSET))

        def _parse_priority(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        priority = _parse_priority(d.pop("priority", UNSET))

        def _parse_template(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        template = _parse_template(d.pop("template", UNSET))

        def _parse_timezone(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        timezone = _parse_timezone(d.pop("timezone", UNSET))

        schedule_patch = cls(
            cron=cron,
            description=description,
            enabled=enabled,
            input_=input_,
            limits=limits,
            overlap=overlap,
            plan=plan,
            priority=priority,
            template=template,
            timezone=timezone,
        )

        return schedule_patch
