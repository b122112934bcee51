from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from typing_extensions import Self

from ..types import UNSET, Unset

T = TypeVar("T", bound="TaskLimitsView")


@_attrs_define
class TaskLimitsView:
    """The limits a task runs under (the submit's `limits` over the configured defaults).

    Attributes:
        max_concurrent_steps (int):
        max_consecutive_failures (int):
        max_reflection_rounds (int):
        max_single_step_repairs (int):
        max_step_retries (int):
        max_task_replans (int):
        max_cost (float | None | Unset): Money it may spend (none: no cap).
        max_llm_calls (int | None | Unset):
        max_llm_tokens (int | None | Unset):
    """

    max_concurrent_steps: int
    max_consecutive_failures: int
    max_reflection_rounds: int
    max_single_step_repairs: int
    max_step_retries: int
    max_task_replans: int
    max_cost: float | None | Unset = UNSET
    max_llm_calls: int | None | Unset = UNSET
    max_llm_tokens: int | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        max_concurrent_steps = self.max_concurrent_steps

        max_consecutive_failures = self.max_consecutive_failures

        max_reflection_rounds = self.max_reflection_rounds

        max_single_step_repairs = self.max_single_step_repairs

        max_step_retries = self.max_step_retries

        max_task_replans = self.max_task_replans

        max_cost: float | None | Unset
        if isinstance(self.max_cost, Unset):
            max_cost = UNSET
        else:
            max_cost = self.max_cost

        max_llm_calls: int | None | Unset
        if isinstance(self.max_llm_calls, Unset):
            max_llm_calls = UNSET
        else:
            max_llm_calls = self.max_llm_calls

        max_llm_tokens: int | None | Unset
        if isinstance(self.max_llm_tokens, Unset):
            max_llm_tokens = UNSET
        else:
            max_llm_tokens = self.max_llm_tokens

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "max_concurrent_steps": max_concurrent_steps,
                "max_consecutive_failures": max_consecutive_failures,
                "max_reflection_rounds": max_reflection_rounds,
                "max_single_step_repairs": max_single_step_repairs,
                "max_step_retries": max_step_retries,
                "max_task_replans": max_task_replans,
            }
        )
        if max_cost is not UNSET:
            field_dict["max_cost"] = max_cost
        if max_llm_calls is not UNSET:
            field_dict["max_llm_calls"] = max_llm_calls
        if max_llm_tokens is not UNSET:
            field_dict["max_llm_tokens"] = max_llm_tokens

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        max_concurrent_steps = d.pop("max_concurrent_steps")

        max_consecutive_failures = d.pop("max_consecutive_failures")

        max_reflection_rounds = d.pop("max_reflection_rounds")

        max_single_step_repairs = d.pop("max_single_step_repairs")

        max_step_retries = d.pop("max_step_retries")

        max_task_replans = d.pop("max_task_replans")

        def _parse_max_cost(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        max_cost = _parse_max_cost(d.pop("max_cost", UNSET))

        def _parse_max_llm_calls(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        max_llm_calls = _parse_max_llm_calls(d.pop("max_llm_calls", UNSET))

        def _parse_max_llm_tokens(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        max_llm_tokens = _parse_max_llm_tokens(d.pop("max_llm_tokens", UNSET))

        task_limits_view = cls(
            max_concurrent_steps=max_concurrent_steps,
            max_consecutive_failures=max_consecutive_failures,
            max_reflection_rounds=max_reflection_rounds,
            max_single_step_repairs=max_single_step_repairs,
            max_step_retries=max_step_retries,
            max_task_replans=max_task_replans,
            max_cost=max_cost,
            max_llm_calls=max_llm_calls,
            max_llm_tokens=max_llm_tokens,
        )

        task_limits_view.additional_properties = d
        return task_limits_view

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
