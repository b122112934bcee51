from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast
from uuid import UUID

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from typing_extensions import Self

from ..models.attempt_status import AttemptStatus
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.attempt_error_type_0 import AttemptErrorType0
    from ..models.attempt_parameters import AttemptParameters


T = TypeVar("T", bound="Attempt")


@_attrs_define
class Attempt:
    """An attempt (`GET /tasks/{id}/attempts`).

    Attributes:
        attempt (int):
        finished_at (datetime.datetime):
        parameters (AttemptParameters): Credential-like values are redacted.
        plan_version (int):
        started_at (datetime.datetime):
        status (AttemptStatus):
        step_id (str):
        tool (str):
        duration_ms (int | None | Unset):
        error (AttemptErrorType0 | None | Unset):
        idempotency_key (None | str | Unset): The `Idempotency-Key` the call carried: the same for every attempt of one
            call (HTTP
            and MCP tools, `http_request`, `task`; null for the others).
        output (Any | Unset): the tool's output: any JSON value (null while there is none)
        worker_id (None | Unset | UUID):
    """

    attempt: int
    finished_at: datetime.datetime
    parameters: AttemptParameters
    plan_version: int
    started_at: datetime.datetime
    status: AttemptStatus
    step_id: str
    tool: str
    duration_ms: int | None | Unset = UNSET
    error: AttemptErrorType0 | None | Unset = UNSET
    idempotency_key: None | str | Unset = UNSET
    output: Any | Unset = UNSET
    worker_id: None | Unset | UUID = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.attempt_error_type_0 import AttemptErrorType0

        attempt = self.attempt

        finished_at = self.finished_at.isoformat()

        parameters = self.parameters.to_dict()

        plan_version = self.plan_version

        started_at = self.started_at.isoformat()

        status = self.status.value

        step_id = self.step_id

        tool = self.tool

        duration_ms: int | None | Unset
        if isinstance(self.duration_ms, Unset):
            duration_ms = UNSET
        else:
            duration_ms = self.duration_ms

        error: dict[str, Any] | None | Unset
        if isinstance(self.error, Unset):
            error = UNSET
        elif isinstance(self.error, AttemptErrorType0):
            error = self.error.to_dict()
        else:
            error = self.error

        idempotency_key: None | str | Unset
        if isinstance(self.idempotency_key, Unset):
            idempotency_key = UNSET
        else:
            idempotency_key = self.idempotency_key

        output = self.output

        worker_id: None | str | Unset
        if isinstance(self.worker_id, Unset):
            worker_id = UNSET
        elif isinstance(self.worker_id, UUID):
            worker_id = str(self.worker_id)
        else:
            worker_id = self.worker_id

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "attempt": attempt,
                "finished_at": finished_at,
                "parameters": parameters,
                "plan_version": plan_version,
                "started_at": started_at,
                "status": status,
                "step_id": step_id,
                "tool": tool,
            }
        )
        if duration_ms is not UNSET:
            field_dict["duration_ms"] = duration_ms
        if error is not UNSET:
            field_dict["error"] = error
        if idempotency_key is not UNSET:
            field_dict["idempotency_key"] = idempotency_key
        if output is not UNSET:
            field_dict["output"] = output
        if worker_id is not UNSET:
            field_dict["worker_id"] = worker_id

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.attempt_error_type_0 import AttemptErrorType0
        from ..models.attempt_parameters import AttemptParameters

        d = dict(src_dict)
        attempt = d.pop("attempt")

        finished_at = datetime.datetime.fromisoformat(d.pop("finished_at"))

        parameters = AttemptParameters.from_dict(d.pop("parameters"))

        plan_version = d.pop("plan_version")

        started_at = datetime.datetime.fromisoformat(d.pop("started_at"))

        status = AttemptStatus(d.pop("status"))

        step_id = d.pop("step_id")

        tool = d.pop("tool")

        def _parse_duration_ms(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        duration_ms = _parse_duration_ms(d.pop("duration_ms", UNSET))

        def _parse_error(data: object) -> AttemptErrorType0 | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                error_type_0 = AttemptErrorType0.from_dict(data)

                return error_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(AttemptErrorType0 | None | Unset, data)

        error = _parse_error(d.pop("error", UNSET))

        def _parse_idempotency_key(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        idempotency_key = _parse_idempotency_key(d.pop("idempotency_key", UNSET))

        output = d.pop("output", UNSET)

        def _parse_worker_id(data: object) -> None | Unset | UUID:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                worker_id_type_0 = UUID(data)

                return worker_id_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | Unset | UUID, data)

        worker_id = _parse_worker_id(d.pop("worker_id", UNSET))

        attempt = cls(
            attempt=attempt,
            finished_at=finished_at,
            parameters=parameters,
            plan_version=plan_version,
            started_at=started_at,
            status=status,
            step_id=step_id,
            tool=tool,
            duration_ms=duration_ms,
            error=error,
            idempotency_key=idempotency_key,
            output=output,
            worker_id=worker_id,
        )

        attempt.additional_properties = d
        return attempt

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
