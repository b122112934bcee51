from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from typing_extensions import Self

from ..types import UNSET, Unset

T = TypeVar("T", bound="Limits")


@_attrs_define
class Limits:
    """Limits for one task, over the configured defaults (`[limits]`).

    Attributes:
        max_consecutive_failures (int | None | Unset):
        max_cost (float | None | Unset): Money the task may spend, in the price map's currency (`/model-prices`, and its
            tools'
            reported `usage.cost`); past it the task stops with `error.code` `cost_limit_exceeded`.
        max_llm_calls (int | None | Unset): Cap on LLM calls for this task; past it decisions take their fallbacks.
        max_llm_tokens (int | None | Unset): Cap on LLM tokens for this task; past it decisions take their fallbacks.
        max_single_step_repairs (int | None | Unset):
        max_step_retries (int | None | Unset):
        max_task_replans (int | None | Unset):
        task_timeout_secs (int | None | Unset): Wall-time budget from submission in seconds (0: none); past it the task
            fails with
            `error.code` `deadline_exceeded`.
    """

    max_consecutive_failures: int | None | Unset = UNSET
    max_cost: float | None | Unset = UNSET
    max_llm_calls: int | None | Unset = UNSET
    max_llm_tokens: int | None | Unset = UNSET
    max_single_step_repairs: int | None | Unset = UNSET
    max_step_retries: int | None | Unset = UNSET
    max_task_replans: int | None | Unset = UNSET
    task_timeout_secs: int | None | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        max_consecutive_failures: int | None | Unset
        if isinstance(self.max_consecutive_failures, Unset):
            max_consecutive_failures = UNSET
        else:
            max_consecutive_failures = self.max_consecutive_failures

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

        max_single_step_repairs: int | None | Unset
        if isinstance(self.max_single_step_repairs, Unset):
            max_single_step_repairs = UNSET
        else:
            max_single_step_repairs = self.max_single_step_repairs

        max_step_retries: int | None | Unset
        if isinstance(self.max_step_retries, Unset):
            max_step_retries = UNSET
        else:
            max_step_retries = self.max_step_retries

        max_task_replans: int | None | Unset
        if isinstance(self.max_task_replans, Unset):
            max_task_replans = UNSET
        else:
            max_task_replans = self.max_task_replans

        task_timeout_secs: int | None | Unset
        if isinstance(self.task_timeout_secs, Unset):
            task_timeout_secs = UNSET
        else:
            task_timeout_secs = self.task_timeout_secs

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if max_consecutive_failures is not UNSET:
            field_dict["max_consecutive_failures"] = max_consecutive_failures
        if max_cost is not UNSET:
            field_dict["max_cost"] = max_cost
        if max_llm_calls is not UNSET:
            field_dict["max_llm_calls"] = max_llm_calls
        if max_llm_tokens is not UNSET:
            field_dict["max_llm_tokens"] = max_llm_tokens
        if max_single_step_repairs is not UNSET:
            field_dict["max_single_step_repairs"] = max_single_step_repairs
        if max_step_retries is not UNSET:
            field_dict["max_step_retries"] = max_step_retries
        if max_task_replans is not UNSET:
            field_dict["max_task_replans"] = max_task_replans
        if task_timeout_secs is not UNSET:
            field_dict["task_timeout_secs"] = task_timeout_secs

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)

        def _parse_max_consecutive_failures(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        max_consecutive_failures = _parse_max_consecutive_failures(
            d.pop("max_consecutive_failures", UNSET)
        )

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

        def _parse_max_single_step_repairs(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        max_single_step_repairs = _parse_max_single_step_repairs(
            d.pop("max_single_step_repairs", UNSET)
        )

        def _parse_max_step_retries(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        max_step_retries = _parse_max_step_retries(d.pop("max_step_retries", UNSET))

        def _parse_max_task_replans(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        max_task_replans = _parse_max_task_replans(d.pop("max_task_replans", UNSET))

        def _parse_task_timeout_secs(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        task_timeout_secs = _parse_task_timeout_secs(d.pop("task_timeout_secs", UNSET))

        limits = cls(
            max_consecutive_failures=max_consecutive_failures,
            max_cost=max_cost,
            max_llm_calls=max_llm_calls,
            max_llm_tokens=max_llm_tokens,
            max_single_step_repairs=max_single_step_repairs,
            max_step_retries=max_step_retries,
            max_task_replans=max_task_replans,
            task_timeout_secs=task_timeout_secs,
        )

        return limits
