from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from typing_extensions import Self

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.step import Step


T = TypeVar("T", bound="Plan")


@_attrs_define
class Plan:
    """A plan as submitted by a client (CONTRACT.md `plan`).

    Attributes:
        steps (list[Step]):
        estimated_duration (int | None | Unset):
        reasoning (str | Unset):
    """

    steps: list[Step]
    estimated_duration: int | None | Unset = UNSET
    reasoning: str | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        steps = []
        for steps_item_data in self.steps:
            steps_item = steps_item_data.to_dict()
            steps.append(steps_item)

        estimated_duration: int | None | Unset
        if isinstance(self.estimated_duration, Unset):
            estimated_duration = UNSET
        else:
            estimated_duration = self.estimated_duration

        reasoning = self.reasoning

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "steps": steps,
            }
        )
        if estimated_duration is not UNSET:
            field_dict["estimated_duration"] = estimated_duration
        if reasoning is not UNSET:
            field_dict["reasoning"] = reasoning

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.step import Step

        d = dict(src_dict)
        steps = []
        _steps = d.pop("steps")
        for steps_item_data in _steps:
            steps_item = Step.from_dict(steps_item_data)

            steps.append(steps_item)

        def _parse_estimated_duration(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        estimated_duration = _parse_estimated_duration(
            d.pop("estimated_duration", UNSET)
        )

        reasoning = d.pop("reasoning", UNSET)

        plan = cls(
            steps=steps,
            estimated_duration=estimated_duration,
            reasoning=reasoning,
        )

        return plan
