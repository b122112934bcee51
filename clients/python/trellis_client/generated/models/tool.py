from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from typing_extensions import Self

from ..models.tool_kind import ToolKind
from ..models.tool_mode import ToolMode
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.circuit import Circuit
    from ..models.circuit_breaker import CircuitBreaker
    from ..models.failure_rule import FailureRule
    from ..models.retry_policy import RetryPolicy
    from ..models.tool_headers import ToolHeaders
    from ..models.tool_input_schema import ToolInputSchema
    from ..models.tool_output_schema_type_0 import ToolOutputSchemaType0


T = TypeVar("T", bound="Tool")


@_attrs_define
class Tool:
    """A tool of the registry (`/tools`).

    Attributes:
        alternatives (list[str]):
        circuit (Circuit): A tool's circuit breaker as the fleet sees it now.
        created_at (datetime.datetime):
        description (str):
        failure_when (list[FailureRule]): Rules by which a 2xx answer's body says the call failed.
        headers (ToolHeaders): Call headers: `${secret.NAME}` references as given; a literal credential-like value is
            redacted.
        id (str):
        input_schema (ToolInputSchema):
        kind (ToolKind):
        mode (ToolMode):
        name (str):
        output_params (list[str]):
        paused (bool): Held (`POST /tools/{id}/pause`): the claim starts none of its steps; they wait queued.
        rate_limit_burst (int): Token-bucket size for `rate_limit_per_sec`.
        requires_approval (bool): Every call waits for a person's approval first (`GET /waits`).
        tags (list[str]):
        tenant (str): The tenant whose plans may name it (a built-in: every tenant's; shown as `default`).
        timeout_ms (int):
        updated_at (datetime.datetime):
        cancel_url (None | str | Unset): Where a cancellation of a call in flight is POSTed (null: none).
        circuit_breaker (CircuitBreaker | None | Unset):
        endpoint (None | str | Unset): Credentials in the URL are redacted; null for a built-in.
        max_concurrency (int | None | Unset): At most this many steps of the tool run at once, fleet-wide (null: no
            limit).
        output_schema (bool | None | ToolOutputSchemaType0 | Unset):
        rate_limit_per_sec (float | None | Unset): Steps started per second, fleet-wide token bucket (null: no limit).
        retry (None | RetryPolicy | Unset):
    """

    alternatives: list[str]
    circuit: Circuit
    created_at: datetime.datetime
    description: str
    failure_when: list[FailureRule]
    headers: ToolHeaders
    id: str
    input_schema: ToolInputSchema
    kind: ToolKind
    mode: ToolMode
    name: str
    output_params: list[str]
    paused: bool
    rate_limit_burst: int
    requires_approval: bool
    tags: list[str]
    tenant: str
    timeout_ms: int
    updated_at: datetime.datetime
    cancel_url: None | str | Unset = UNSET
    circuit_breaker: CircuitBreaker | None | Unset = UNSET
    endpoint: None | str | Unset = UNSET
    max_concurrency: int | None | Unset = UNSET
    output_schema: bool | None | ToolOutputSchemaType0 | Unset = UNSET
    rate_limit_per_sec: float | None | Unset = UNSET
    retry: None | RetryPolicy | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.circuit_breaker import CircuitBreaker
        from ..models.retry_policy import RetryPolicy
        from ..models.tool_output_schema_type_0 import ToolOutputSchemaType0

        alternatives = self.alternatives

        circuit = self.circuit.to_dict()

        created_at = self.created_at.isoformat()

        description = self.description

        failure_when = []
        for failure_when_item_data in self.failure_when:
            failure_when_item = failure_when_item_data.to_dict()
            failure_when.append(failure_when_item)

        headers = self.headers.to_dict()

        id = self.id

        input_schema = self.input_schema.to_dict()

        kind = self.kind.value

        mode = self.mode.value

        name = self.name

        output_params = self.output_params

        paused = self.paused

        rate_limit_burst = self.rate_limit_burst

        requires_approval = self.requires_approval

        tags = self.tags

        tenant = self.tenant

        timeout_ms = self.timeout_ms

        updated_at = self.updated_at.isoformat()

        cancel_url: None | str | Unset
        if isinstance(self.cancel_url, Unset):
            cancel_url = UNSET
        else:
            cancel_url = self.cancel_url

        circuit_breaker: dict[str, Any] | None | Unset
        if isinstance(self.circuit_breaker, Unset):
            circuit_breaker = UNSET
        elif isinstance(self.circuit_breaker, CircuitBreaker):
            circuit_breaker = self.circuit_breaker.to_dict()
        else:
            circuit_breaker = self.circuit_breaker

        endpoint: None | str | Unset
        if isinstance(self.endpoint, Unset):
            endpoint = UNSET
        else:
            endpoint = self.endpoint

        max_concurrency: int | None | Unset
        if isinstance(self.max_concurrency, Unset):
            max_concurrency = UNSET
        else:
            max_concurrency = self.max_concurrency

        output_schema: bool | dict[str, Any] | None | Unset
        if isinstance(self.output_schema, Unset):
            output_schema = UNSET
        elif isinstance(self.output_schema, ToolOutputSchemaType0):
            output_schema = self.output_schema.to_dict()
        else:
            output_schema = self.output_schema

        rate_limit_per_sec: float | None | Unset
        if isinstance(self.rate_limit_per_sec, Unset):
            rate_limit_per_sec = UNSET
        else:
            rate_limit_per_sec = self.rate_limit_per_sec

        retry: dict[str, Any] | None | Unset
        if isinstance(self.retry, Unset):
            retry = UNSET
        elif isinstance(self.retry, RetryPolicy):
            retry = self.retry.to_dict()
        else:
            retry = self.retry

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "alternatives": alternatives,
                "circuit": circuit,
                "created_at": created_at,
                "description": description,
                "failure_when": failure_when,
                "headers": headers,
                "id": id,
                "input_schema": input_schema,
                "kind": kind,
                "mode": mode,
                "name": name,
                "output_params": output_params,
                "paused": paused,
                "rate_limit_burst": rate_limit_burst,
                "requires_approval": requires_approval,
                "tags": tags,
                "tenant": tenant,
                "timeout_ms": timeout_ms,
                "updated_at": updated_at,
            }
        )
        if cancel_url is not UNSET:
            field_dict["cancel_url"] = cancel_url
        if circuit_breaker is not UNSET:
            field_dict["circuit_breaker"] = circuit_breaker
        if endpoint is not UNSET:
            field_dict["endpoint"] = endpoint
        if max_concurrency is not UNSET:
            field_dict["max_concurrency"] = max_concurrency
        if output_schema is not UNSET:
            field_dict["output_schema"] = output_schema
        if rate_limit_per_sec is not UNSET:
            field_dict["rate_limit_per_sec"] = rate_limit_per_sec
        if retry is not UNSET:
            field_dict["retry"] = retry

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.circuit import Circuit
        from ..models.circuit_breaker import CircuitBreaker
        from ..models.failure_rule import FailureRule
        from ..models.retry_policy import RetryPolicy
        from ..models.tool_headers import ToolHeaders
        from ..models.tool_input_schema import ToolInputSchema
        from ..models.tool_output_schema_type_0 import ToolOutputSchemaType0

        d = dict(src_dict)
        alternatives = cast(list[str], d.pop("alternatives"))

        circuit = Circuit.from_dict(d.pop("circuit"))

        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))

        description = d.pop("description")

        failure_when = []
        _failure_when = d.pop("failure_when")
        for failure_when_item_data in _failure_when:
            failure_when_item = FailureRule.from_dict(failure_when_item_data)

            failure_when.append(failure_when_item)

        headers = ToolHeaders.from_dict(d.pop("headers"))

        id = d.pop("id")

        input_schema = ToolInputSchema.from_dict(d.pop("input_schema"))

        kind = ToolKind(d.pop("kind"))

        mode = ToolMode(d.pop("mode"))

        name = d.pop("name")

        output_params = cast(list[str], d.pop("output_params"))

        paused = d.pop("paused")

        rate_limit_burst = d.pop("rate_limit_burst")

        requires_approval = d.pop("requires_approval")

        tags = cast(list[str], d.pop("tags"))

        tenant = d.pop("tenant")

        timeout_ms = d.pop("timeout_ms")

        updated_at = datetime.datetime.fromisoformat(d.pop("updated_at"))

        def _parse_cancel_url(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        cancel_url = _parse_cancel_url(d.pop("cancel_url", UNSET))

        def _parse_circuit_breaker(data: object) -> CircuitBreaker | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                circuit_breaker_type_0 = CircuitBreaker.from_dict(data)

                return circuit_breaker_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(CircuitBreaker | None | Unset, data)

        circuit_breaker = _parse_circuit_breaker(d.pop("circuit_breaker", UNSET))

        def _parse_endpoint(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        endpoint = _parse_endpoint(d.pop("endpoint", UNSET))

        def _parse_max_concurrency(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        max_concurrency = _parse_max_concurrency(d.pop("max_concurrency", UNSET))

        def _parse_output_schema(
            data: object,
        ) -> bool | None | ToolOutputSchemaType0 | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                output_schema_type_0 = ToolOutputSchemaType0.from_dict(data)

                return output_schema_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(bool | None | ToolOutputSchemaType0 | Unset, data)

        output_schema = _parse_output_schema(d.pop("output_schema", UNSET))

        def _parse_rate_limit_per_sec(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        rate_limit_per_sec = _parse_rate_limit_per_sec(
            d.pop("rate_limit_per_sec", UNSET)
        )

        def _parse_retry(data: object) -> None | RetryPolicy | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                retry_type_0 = RetryPolicy.from_dict(data)

                return retry_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | RetryPolicy | Unset, data)

        retry = _parse_retry(d.pop("retry", UNSET))

        tool = cls(
            alternatives=alternatives,
            circuit=circuit,
            created_at=created_at,
            description=description,
            failure_when=failure_when,
            headers=headers,
            id=id,
            input_schema=input_schema,
            kind=kind,
            mode=mode,
            name=name,
            output_params=output_params,
            paused=paused,
            rate_limit_burst=rate_limit_burst,
            requires_approval=requires_approval,
            tags=tags,
            tenant=tenant,
            timeout_ms=timeout_ms,
            updated_at=updated_at,
            cancel_url=cancel_url,
            circuit_breaker=circuit_breaker,
            endpoint=endpoint,
            max_concurrency=max_concurrency,
            output_schema=output_schema,
            rate_limit_per_sec=rate_limit_per_sec,
            retry=retry,
        )

        tool.additional_properties = d
        return tool

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
