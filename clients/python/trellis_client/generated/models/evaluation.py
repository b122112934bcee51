from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from typing_extensions import Self

T = TypeVar("T", bound="Evaluation")


@_attrs_define
class Evaluation:
    """`GET /tasks/{id}/evaluations`.

    Attributes:
        completeness (float):
        correctness (float):
        created_at (datetime.datetime):
        efficiency (float):
        failures (list[str]):
        improvement_suggestions (list[str]):
        is_successful (bool):
        overall_score (float):
        plan_version (int):
        reliability (float):
        round_ (int):
        successes (list[str]):
    """

    completeness: float
    correctness: float
    created_at: datetime.datetime
    efficiency: float
    failures: list[str]
    improvement_suggestions: list[str]
    is_successful: bool
    overall_score: float
    plan_version: int
    reliability: float
    round_: int
    successes: list[str]
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        completeness = self.completeness

        correctness = self.correctness

        created_at = self.created_at.isoformat()

        efficiency = self.efficiency

        failures = self.failures

        improvement_suggestions = self.improvement_suggestions

        is_successful = self.is_successful

        overall_score = self.overall_score

        plan_version = self.plan_version

        reliability = self.reliability

        round_ = self.round_

        successes = self.successes

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "completeness": completeness,
                "correctness": correctness,
                "created_at": created_at,
                "efficiency": efficiency,
                "failures": failures,
                "improvement_suggestions": improvement_suggestions,
                "is_successful": is_successful,
                "overall_score": overall_score,
                "plan_version": plan_version,
                "reliability": reliability,
                "round": round_,
                "successes": successes,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        completeness = d.pop("completeness")

        correctness = d.pop("correctness")

        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))

        efficiency = d.pop("efficiency")

        failures = cast(list[str], d.pop("failures"))

        improvement_suggestions = cast(list[str], d.pop("improvement_suggestions"))

        is_successful = d.pop("is_successful")

        overall_score = d.pop("overall_score")

        plan_version = d.pop("plan_version")

        reliability = d.pop("reliability")

        round_ = d.pop("round")

        successes = cast(list[str], d.pop("successes"))

        evaluation = cls(
            completeness=completeness,
            correctness=correctness,
            created_at=created_at,
            efficiency=efficiency,
            failures=failures,
            improvement_suggestions=improvement_suggestions,
            is_successful=is_successful,
            overall_score=overall_score,
            plan_version=plan_version,
            reliability=reliability,
            round_=round_,
            successes=successes,
        )

        evaluation.additional_properties = d
        return evaluation

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
