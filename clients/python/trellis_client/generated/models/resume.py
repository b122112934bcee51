from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from typing_extensions import Self

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.plan import Plan
    from ..models.resume_step_overrides import ResumeStepOverrides


T = TypeVar("T", bound="Resume")


@_attrs_define
class Resume:
    """`POST /tasks/{id}/resume`: a replacement plan, or parameter/tool overrides for steps.

    Attributes:
        plan (None | Plan | Unset):
        step_overrides (ResumeStepOverrides | Unset): By step id: parameters merged into the step's, or another tool.
    """

    plan: None | Plan | Unset = UNSET
    step_overrides: ResumeStepOverrides | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        from ..models.plan import Plan

        plan: dict[str, Any] | None | Unset
        if isinstance(self.plan, Unset):
            plan = UNSET
        elif isinstance(self.plan, Plan):
            plan = self.plan.to_dict()
        else:
            plan = self.plan

        step_overrides: dict[str, Any] | Unset = UNSET
        if not isinstance(self.step_overrides, Unset):
            step_overrides = self.step_overrides.to_dict()

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if plan is not UNSET:
            field_dict["plan"] = plan
        if step_overrides is not UNSET:
            field_dict["step_overrides"] = step_overrides

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.plan import Plan
        from ..models.resume_step_overrides import ResumeStepOverrides

        d = dict(src_dict)

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

        _step_overrides = d.pop("step_overrides", UNSET)
        step_overrides: ResumeStepOverrides | Unset
        if isinstance(_step_overrides, Unset):
            step_overrides = UNSET
        else:
            step_overrides = ResumeStepOverrides.from_dict(_step_overrides)

        resume = cls(
            plan=plan,
            step_overrides=step_overrides,
        )

        return resume
