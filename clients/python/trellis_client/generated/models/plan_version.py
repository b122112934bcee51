from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from typing_extensions import Self

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.plan_step_view import PlanStepView


T = TypeVar("T", bound="PlanVersion")


@_attrs_define
class PlanVersion:
    """One plan version with its steps (decoded from a `plans` row; `steps` filled by [`PlanView::with_steps`]).

    Attributes:
        created_at (datetime.datetime):
        origin (str): `initial`, `template:<id>`, `repair`, `resume`, `rerun` or `replan:<strategy>`.
        reasoning (str):
        steps (list[PlanStepView]):
        version (int):
        estimated_duration (int | None | Unset):
    """

    created_at: datetime.datetime
    origin: str
    reasoning: str
    steps: list[PlanStepView]
    version: int
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
            }
        )
        if estimated_duration is not UNSET:
            field_dict["estimated_duration"] = estimated_duration

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.plan_step_view import PlanStepView

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

        def _parse_estimated_duration(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        estimated_duration = _parse_estimated_duration(
            d.pop("estimated_duration", UNSET)
        )

        plan_version = cls(
            created_at=created_at,
            origin=origin,
            reasoning=reasoning,
            steps=steps,
            version=version,
            estimated_duration=estimated_duration,
        )

        plan_version.additional_properties = d
        return plan_version

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
