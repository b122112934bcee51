from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast
from uuid import UUID

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from typing_extensions import Self

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.plan_step_view import PlanStepView
    from ..models.plan_version import PlanVersion


T = TypeVar("T", bound="PlanView")


@_attrs_define
class PlanView:
    """`GET /tasks/{id}/plan`: the current version, and the others as history.

    Attributes:
        created_at (datetime.datetime):
        origin (str): `initial`, `template:<id>`, `repair`, `resume`, `rerun` or `replan:<strategy>`.
        reasoning (str):
        steps (list[PlanStepView]):
        version (int):
        history (list[PlanVersion]):
        task_id (UUID):
        estimated_duration (int | None | Unset):
    """

    created_at: datetime.datetime
    origin: str
    reasoning: str
    steps: list[PlanStepView]
    version: int
    history: list[PlanVersion]
    task_id: UUID
    estimated_duration: int | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        created_at = self.created_at.isoformat()

        origin = self.origin

        reasoning = self.reasoning

        steps = []
        for steps_item_data in self.steps:
            steps_item = steps_item_data.to_dict()
            steps.append(steps_item)

        version = self.version

        history = []
        for history_item_data in self.history:
            history_item = history_item_data.to_dict()
            history.append(history_item)

        task_id = str(self.task_id)

        estimated_duration: int | None | Unset
        if isinstance(self.estimated_duration, Unset):
            estimated_duration = UNSET
        else:
            estimated_duration = self.estimated_duration

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "created_at": created_at,
                "origin": origin,
                "reasoning": reasoning,
                "steps": steps,
                "version": version,
                "history": history,
                "task_id": task_id,
            }
        )
        if estimated_duration is not UNSET:
            field_dict["estimated_duration"] = estimated_duration

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.plan_step_view import PlanStepView
        from ..models.plan_version import PlanVersion

        d = dict(src_dict)
        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))

        origin = d.pop("origin")

        reasoning = d.pop("reasoning")

        steps = []
        _steps = d.pop("steps")
        for steps_item_data in _steps:
            steps_item = PlanStepView.from_dict(steps_item_data)

            steps.append(steps_item)

        version = d.pop("version")

        history = []
        _history = d.pop("history")
        for history_item_data in _history:
            history_item = PlanVersion.from_dict(history_item_data)

            history.append(history_item)

        task_id = UUID(d.pop("task_id"))

        def _parse_estimated_duration(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        estimated_duration = _parse_estimated_duration(
            d.pop("estimated_duration", UNSET)
        )

        plan_view = cls(
            created_at=created_at,
            origin=origin,
            reasoning=reasoning,
            steps=steps,
            version=version,
            history=history,
            task_id=task_id,
            estimated_duration=estimated_duration,
        )

        plan_view.additional_properties = d
        return plan_view

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
