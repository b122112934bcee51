from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from typing_extensions import Self

from ..types import UNSET, Unset

T = TypeVar("T", bound="RetryPolicy")


@_attrs_define
class RetryPolicy:
    """A tool's retry policy (the tool field `retry`): each part optional, the workers' `[worker]`
    defaults apply to the rest.

        Attributes:
            backoff_coefficient (float | None | Unset): Each failure in a row multiplies the delay by this (default 2).
            initial_interval_ms (int | None | Unset): The first retry's delay (default `[worker] retry_backoff_ms`).
            max_attempts (int | None | Unset): Failed attempts of a step of this tool before tier 1 escalates to a repair
                (default:
                the task's `max_step_retries` and `max_consecutive_failures`).
            max_elapsed_secs (float | None | Unset): No retry starts later than this after the first failure of the streak.
            max_interval_ms (int | None | Unset): The longest delay (default `[worker] retry_backoff_max_ms`).
    """

    backoff_coefficient: float | None | Unset = UNSET
    initial_interval_ms: int | None | Unset = UNSET
    max_attempts: int | None | Unset = UNSET
    max_elapsed_secs: float | None | Unset = UNSET
    max_interval_ms: int | None | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        backoff_coefficient: float | None | Unset
        if isinstance(self.backoff_coefficient, Unset):
            backoff_coefficient = UNSET
        else:
            backoff_coefficient = self.backoff_coefficient

        initial_interval_ms: int | None | Unset
        if isinstance(self.initial_interval_ms, Unset):
            initial_interval_ms = UNSET
        else:
            initial_interval_ms = self.initial_interval_ms

        max_attempts: int | None | Unset
        if isinstance(self.max_attempts, Unset):
            max_attempts = UNSET
        else:
            max_attempts = self.max_attempts

        max_elapsed_secs: float | None | Unset
        if isinstance(self.max_elapsed_secs, Unset):
            max_elapsed_secs = UNSET
        else:
            max_elapsed_secs = self.max_elapsed_secs

        max_interval_ms: int | None | Unset
        if isinstance(self.max_interval_ms, Unset):
            max_interval_ms = UNSET
        else:
            max_interval_ms = self.max_interval_ms

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if backoff_coefficient is not UNSET:
            field_dict["backoff_coefficient"] = backoff_coefficient
        if initial_interval_ms is not UNSET:
            field_dict["initial_interval_ms"] = initial_interval_ms
        if max_attempts is not UNSET:
            field_dict["max_attempts"] = max_attempts
        if max_elapsed_secs is not UNSET:
            field_dict["max_elapsed_secs"] = max_elapsed_secs
        if max_interval_ms is not UNSET:
            field_dict["max_interval_ms"] = max_interval_ms

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)

        def _parse_backoff_coefficient(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        backoff_coefficient = _parse_backoff_coefficient(
            d.pop("backoff_coefficient", UNSET)
        )

        def _parse_initial_interval_ms(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        initial_interval_ms = _parse_initial_interval_ms(
            d.pop("initial_interval_ms", UNSET)
        )

        def _parse_max_attempts(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        max_attempts = _parse_max_attempts(d.pop("max_attempts", UNSET))

        def _parse_max_elapsed_secs(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        max_elapsed_secs = _parse_max_elapsed_secs(d.pop("max_elapsed_secs", UNSET))

        def _parse_max_interval_ms(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        max_interval_ms = _parse_max_interval_ms(d.pop("max_interval_ms", UNSET))

        retry_policy = cls(
            backoff_coefficient=backoff_coefficient,
            initial_interval_ms=initial_interval_ms,
            max_attempts=max_attempts,
            max_elapsed_secs=max_elapsed_secs,
            max_interval_ms=max_interval_ms,
        )

        return retry_policy
