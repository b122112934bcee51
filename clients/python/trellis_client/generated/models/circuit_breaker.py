from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from typing_extensions import Self

from ..types import UNSET, Unset

T = TypeVar("T", bound="CircuitBreaker")


@_attrs_define
class CircuitBreaker:
    """A tool's circuit breaker (the tool field `circuit_breaker`): each part optional, the
    workers' `[worker]` defaults apply to the rest.

        Attributes:
            confirm_failures (int | None | Unset): A step's own outages in a row that confirm the service is down before the
                threshold
                may open the circuit (default `[worker] circuit_confirm_failures`, 3; 1 for a tool with
                an alternative). 3 keeps the circuit closed for a service whose calls fail once or
                twice and then pass on their own retry (per-call flakiness), which many callers at once
                would otherwise add up to an open circuit; 1 counts every outage at once.
            cool_down_secs (float | None | Unset): How long the circuit stays open before one probe (default `[worker]
                circuit_cool_down_secs`, 5).
            failure_threshold (int | None | Unset): Outages in a row, fleet-wide, that open the circuit (timeouts, refused
                connections,
                5xx); 0 turns the breaker off (default `[worker] circuit_failure_threshold`, 5).
    """

    confirm_failures: int | None | Unset = UNSET
    cool_down_secs: float | None | Unset = UNSET
    failure_threshold: int | None | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        confirm_failures: int | None | Unset
        if isinstance(self.confirm_failures, Unset):
            confirm_failures = UNSET
        else:
            confirm_failures = self.confirm_failures

        cool_down_secs: float | None | Unset
        if isinstance(self.cool_down_secs, Unset):
            cool_down_secs = UNSET
        else:
            cool_down_secs = self.cool_down_secs

        failure_threshold: int | None | Unset
        if isinstance(self.failure_threshold, Unset):
            failure_threshold = UNSET
        else:
            failure_threshold = self.failure_threshold

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if confirm_failures is not UNSET:
            field_dict["confirm_failures"] = confirm_failures
        if cool_down_secs is not UNSET:
            field_dict["cool_down_secs"] = cool_down_secs
        if failure_threshold is not UNSET:
            field_dict["failure_threshold"] = failure_threshold

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)

        def _parse_confirm_failures(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        confirm_failures = _parse_confirm_failures(d.pop("confirm_failures", UNSET))

        def _parse_cool_down_secs(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        cool_down_secs = _parse_cool_down_secs(d.pop("cool_down_secs", UNSET))

        def _parse_failure_threshold(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        failure_threshold = _parse_failure_threshold(d.pop("failure_threshold", UNSET))

        circuit_breaker = cls(
            confirm_failures=confirm_failures,
            cool_down_secs=cool_down_secs,
            failure_threshold=failure_threshold,
        )

        return circuit_breaker
