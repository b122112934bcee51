from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from typing_extensions import Self

from ..models.circuit_state import CircuitState
from ..types import UNSET, Unset

T = TypeVar("T", bound="Circuit")


@_attrs_define
class Circuit:
    """A tool's circuit breaker as the fleet sees it now.

    Attributes:
        consecutive_failures (int): Outages in a row, fleet-wide, since the last success.
        state (CircuitState):
        held_until (datetime.datetime | None | Unset): A `Retry-After` the tool answered holds every call until this
            time (null: none).
        pace_ms (int | None | Unset): After a hold (or a probe that closed the circuit), the steps that waited go out
            one per
            this many ms, each in a release slot of its own (null: no release under way).
        released_until (datetime.datetime | None | Unset): The end of the release slots given so far (null: no release
            under way).
        until (datetime.datetime | None | Unset): When an open circuit lets its probe through (null unless open).
    """

    consecutive_failures: int
    state: CircuitState
    held_until: datetime.datetime | None | Unset = UNSET
    pace_ms: int | None | Unset = UNSET
    released_until: datetime.datetime | None | Unset = UNSET
    until: datetime.datetime | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        consecutive_failures = self.consecutive_failures

        state = self.state.value

        held_until: None | str | Unset
        if isinstance(self.held_until, Unset):
            held_until = UNSET
        elif isinstance(self.held_until, datetime.datetime):
            held_until = self.held_until.isoformat()
        else:
            held_until = self.held_until

        pace_ms: int | None | Unset
        if isinstance(self.pace_ms, Unset):
            pace_ms = UNSET
        else:
            pace_ms = self.pace_ms

        released_until: None | str | Unset
        if isinstance(self.released_until, Unset):
            released_until = UNSET
        elif isinstance(self.released_until, datetime.datetime):
            released_until = self.released_until.isoformat()
        else:
            released_until = self.released_until

        until: None | str | Unset
        if isinstance(self.until, Unset):
            until = UNSET
        elif isinstance(self.until, datetime.datetime):
            until = self.until.isoformat()
        else:
            until = self.until

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "consecutive_failures": consecutive_failures,
                "state": state,
            }
        )
        if held_until is not UNSET:
            field_dict["held_until"] = held_until
        if pace_ms is not UNSET:
            field_dict["pace_ms"] = pace_ms
        if released_until is not UNSET:
            field_dict["released_until"] = released_until
        if until is not UNSET:
            field_dict["until"] = until

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        consecutive_failures = d.pop("consecutive_failures")

        state = CircuitState(d.pop("state"))

        def _parse_held_until(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                held_until_type_0 = datetime.datetime.fromisoformat(data)

                return held_until_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        held_until = _parse_held_until(d.pop("held_until", UNSET))

        def _parse_pace_ms(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        pace_ms = _parse_pace_ms(d.pop("pace_ms", UNSET))

        def _parse_released_until(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                released_until_type_0 = datetime.datetime.fromisoformat(data)

                return released_until_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        released_until = _parse_released_until(d.pop("released_until", UNSET))

        def _parse_until(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                until_type_0 = datetime.datetime.fromisoformat(data)

                return until_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        until = _parse_until(d.pop("until", UNSET))

        circuit = cls(
            consecutive_failures=consecutive_failures,
            state=state,
            held_until=held_until,
            pace_ms=pace_ms,
            released_until=released_until,
            until=until,
        )

        circuit.additional_properties = d
        return circuit

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
