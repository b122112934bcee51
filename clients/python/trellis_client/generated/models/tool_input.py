from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from typing_extensions import Self

from ..models.tool_mode import ToolMode
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.circuit_breaker import CircuitBreaker
    from ..models.failure_rule import FailureRule
    from ..models.retry_policy import RetryPolicy
    from ..models.tool_input_headers import ToolInputHeaders
    from ..models.tool_input_input_schema_type_0 import ToolInputInputSchemaType0
    from ..models.tool_input_output_schema_type_0 import ToolInputOutputSchemaType0


T = TypeVar("T", bound="ToolInput")


@_attrs_define
class ToolInput:
    """`POST /tools`: an HTTP tool (CONTRACT.md "HTTP tools").

    Attributes:
        endpoint (str): An absolute http(s) URL the workers POST the call to.
        id (str):
        alternatives (list[str] | Unset): Tools a retry may switch to.
        cancel_url (None | str | Unset): An absolute http(s) URL the workers POST `{tool, task_id, step_id, attempt}` to
            when a
            call in flight is cancelled (its task was cancelled); the call itself is aborted.
        circuit_breaker (CircuitBreaker | None | Unset):
        description (str | Unset):
        failure_when (list[FailureRule] | Unset): Rules by which a 2xx answer's body says the call failed (at most 16):
            a rule matches
            when the value at its `pointer` equals `equals`, or is there (`present`, the default) or
            not (`present: false`). The well-known envelopes (`{"ok": false}`, a top-level `errors`
            list) are read without rules.
        headers (ToolInputHeaders | Unset): Headers of every call: `{"X-Api-Key": "${secret.search_key}"}` — a value is
            literal
            text, or names secrets (`PUT /secrets/{name}`) that the worker fills in at call time.
        input_schema (None | ToolInputInputSchemaType0 | Unset): JSON Schema of the call's parameters (default
            `{"type":"object"}`), checked before
            every call.
        max_concurrency (int | None | Unset): At most this many steps of the tool at once, fleet-wide (null: no limit).
        mode (ToolMode | Unset):
        name (None | str | Unset): Defaults to the id.
        output_params (list[str] | Unset):
        output_schema (bool | None | ToolInputOutputSchemaType0 | Unset):
        rate_limit_burst (int | None | Unset): Token-bucket size for `rate_limit_per_sec` (default 1).
        rate_limit_per_sec (float | None | Unset): Steps started per second, fleet-wide token bucket (null: no limit).
        requires_approval (bool | Unset): Every call of the tool waits for a person's approval first (`GET /waits`); an
            approver
            may edit its parameters.
        retry (None | RetryPolicy | Unset):
        tags (list[str] | Unset):
        timeout_ms (int | None | Unset): Per call (default 30000).
    """

    endpoint: str
    id: str
    alternatives: list[str] | Unset = UNSET
    cancel_url: None | str | Unset = UNSET
    circuit_breaker: CircuitBreaker | None | Unset = UNSET
    description: str | Unset = UNSET
    failure_when: list[FailureRule] | Unset = UNSET
    headers: ToolInputHeaders | Unset = UNSET
    input_schema: None | ToolInputInputSchemaType0 | Unset = UNSET
    max_concurrency: int | None | Unset = UNSET
    mode: ToolMode | Unset = UNSET
    name: None | str | Unset = UNSET
    output_params: list[str] | Unset = UNSET
    output_schema: bool | None | ToolInputOutputSchemaType0 | Unset = UNSET
    rate_limit_burst: int | None | Unset = UNSET
    rate_limit_per_sec: float | None | Unset = UNSET
    requires_approval: bool | Unset = UNSET
    retry: None | RetryPolicy | Unset = UNSET
    tags: list[str] | Unset = UNSET
    timeout_ms: int | None | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        from ..models.circuit_breaker import CircuitBreaker
        from ..models.retry_policy import RetryPolicy
        from ..models.tool_input_input_schema_type_0 import ToolInputInputSchemaType0
        from ..models.tool_input_output_schema_type_0 import ToolInputOutputSchemaType0

        endpoint = self.endpoint

        id = self.id

        alternatives: list[str] | Unset = UNSET
        if not isinstance(self.alternatives, Unset):
            alternatives = self.alternatives

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

        description = self.description

        failure_when: list[dict[str, Any]] | Unset = UNSET
        if not isinstance(self.failure_when, Unset):
            failure_when = []
            for failure_when_item_data in self.failure_when:
                failure_when_item = failure_when_item_data.to_dict()
                failure_when.append(failure_when_item)

        headers: dict[str, Any] | Unset = UNSET
        if not isinstance(self.headers, Unset):
            headers = self.headers.to_dict()

        input_schema: dict[str, Any] | None | Unset
        if isinstance(self.input_schema, Unset):
            input_schema = UNSET
        elif isinstance(self.input_schema, ToolInputInputSchemaType0):
            input_schema = self.input_schema.to_dict()
        else:
            input_schema = self.input_schema

        max_concurrency: int | None | Unset
        if isinstance(self.max_concurrency, Unset):
            max_concurrency = UNSET
        else:
            max_concurrency = self.max_concurrency

        mode: str | Unset = UNSET
        if not isinstance(self.mode, Unset):
            mode = self.mode.value

        name: None | str | Unset
        if isinstance(self.name, Unset):
            name = UNSET
        else:
            name = self.name

        output_params: list[str] | Unset = UNSET
        if not isinstance(self.output_params, Unset):
            output_params = self.output_params

        output_schema: bool | dict[str, Any] | None | Unset
        if isinstance(self.output_schema, Unset):
            output_schema = UNSET
        elif isinstance(self.output_schema, ToolInputOutputSchemaType0):
            output_schema = self.output_schema.to_dict()
        else:
            output_schema = self.output_schema

        rate_limit_burst: int | None | Unset
        if isinstance(self.rate_limit_burst, Unset):
            rate_limit_burst = UNSET
        else:
            rate_limit_burst = self.rate_limit_burst

        rate_limit_per_sec: float | None | Unset
        if isinstance(self.rate_limit_per_sec, Unset):
            rate_limit_per_sec = UNSET
        else:
            rate_limit_per_sec = self.rate_limit_per_sec

        requires_approval = self.requires_approval

        retry: dict[str, Any] | None | Unset
        if isinstance(self.retry, Unset):
            retry = UNSET
        elif isinstance(self.retry, RetryPolicy):
            retry = self.retry.to_dict()
        else:
            retry = self.retry

        tags: list[str] | Unset = UNSET
        if not isinstance(self.tags, Unset):
            tags = self.tags

        timeout_ms: int | None | Unset
        if isinstance(self.timeout_ms, Unset):
            timeout_ms = UNSET
        else:
            timeout_ms = self.timeout_ms

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "endpoint": endpoint,
                "id": id,
            }
        )
        if alternatives is not UNSET:
            field_dict["alternatives"] = alternatives
        if cancel_url is not UNSET:
            field_dict["cancel_url"] = cancel_url
        if circuit_breaker is not UNSET:
            field_dict["circuit_breaker"] = circuit_breaker
        if description is not UNSET:
            field_dict["description"] = description
        if failure_when is not UNSET:
            field_dict["failure_when"] = failure_when
        if headers is not UNSET:
            field_dict["headers"] = headers
        if input_schema is not UNSET:
            field_dict["input_schema"] = input_schema
        if max_concurrency is not UNSET:
            field_dict["max_concurrency"] = max_concurrency
        if mode is not UNSET:
            field_dict["mode"] = mode
        if name is not UNSET:
            field_dict["name"] = name
        if output_params is not UNSET:
            field_dict["output_params"] = output_params
        if output_schema is not UNSET:
            field_dict["output_schema"] = output_schema
        if rate_limit_burst is not UNSET:
            field_dict["rate_limit_burst"] = rate_limit_burst
        if rate_limit_per_sec is not UNSET:
            field_dict["rate_limit_per_sec"] = rate_limit_per_sec
        if requires_approval is not UNSET:
            field_dict["requires_approval"] = requires_approval
        if retry is not UNSET:
            field_dict["retry"] = retry
        if tags is not UNSET:
            field_dict["tags"] = tags
        if timeout_ms is not UNSET:
            field_dict["timeout_ms"] = timeout_ms

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.circuit_breaker import CircuitBreaker
        from ..models.failure_rule import FailureRule
        from ..models.retry_policy import RetryPolicy
        from ..models.tool_input_headers import ToolInputHeaders
        from ..models.tool_input_input_schema_type_0 import ToolInputInputSchemaType0
        from ..models.tool_input_output_schema_type_0 import ToolInputOutputSchemaType0

        d = dict(src_dict)
        endpoint = d.pop("endpoint")

        id = d.pop("id")

        alternatives = cast(list[str], d.pop("alternatives", UNSET))

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

        description = d.pop("description", UNSET)

        _failure_when = d.pop("failure_when", UNSET)
        failure_when: list[FailureRule] | Unset = UNSET
        if _failure_when is not UNSET:
            failure_when = []
            for failure_when_item_data in _failure_when:
                failure_when_item = FailureRule.from_dict(failure_when_item_data)

                failure_when.append(failure_when_item)

        _headers = d.pop("headers", UNSET)
        headers: ToolInputHeaders | Unset
        if isinstance(_headers, Unset):
            headers = UNSET
        else:
            headers = ToolInputHeaders.from_dict(_headers)

        def _parse_input_schema(
            data: object,
        ) -> None | ToolInputInputSchemaType0 | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                input_schema_type_0 = ToolInputInputSchemaType0.from_dict(data)

                return input_schema_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | ToolInputInputSchemaType0 | Unset, data)

        input_schema = _parse_input_schema(d.pop("input_schema", UNSET))

        def _parse_max_concurrency(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        max_concurrency = _parse_max_concurrency(d.pop("max_concurrency", UNSET))

        _mode = d.pop("mode", UNSET)
        mode: ToolMode | Unset
        if isinstance(_mode, Unset):
            mode = UNSET
        else:
            mode = ToolMode(_mode)

        def _parse_name(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        name = _parse_name(d.pop("name", UNSET))

        output_params = cast(list[str], d.pop("output_params", UNSET))

        def _parse_output_schema(
            data: object,
        ) -> bool | None | ToolInputOutputSchemaType0 | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                output_schema_type_0 = ToolInputOutputSchemaType0.from_dict(data)

                return output_schema_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(bool | None | ToolInputOutputSchemaType0 | Unset, data)

        output_schema = _parse_output_schema(d.pop("output_schema", UNSET))

        def _parse_rate_limit_burst(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        rate_limit_burst = _parse_rate_limit_burst(d.pop("rate_limit_burst", UNSET))

        def _parse_rate_limit_per_sec(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        rate_limit_per_sec = _parse_rate_limit_per_sec(
            d.pop("rate_limit_per_sec", UNSET)
        )

        requires_approval = d.pop("requires_approval", UNSET)

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

        tags = cast(list[str], d.pop("tags", UNSET))

        def _parse_timeout_ms(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        timeout_ms = _parse_timeout_ms(d.pop("timeout_ms", UNSET))

        tool_input = cls(
            endpoint=endpoint,
            id=id,
            alternatives=alternatives,
            cancel_url=cancel_url,
            circuit_breaker=circuit_breaker,
            description=description,
            failure_when=failure_when,
            headers=headers,
            input_schema=input_schema,
            max_concurrency=max_concurrency,
            mode=mode,
            name=name,
            output_params=output_params,
            output_schema=output_schema,
            rate_limit_burst=rate_limit_burst,
            rate_limit_per_sec=rate_limit_per_sec,
            requires_approval=requires_approval,
            retry=retry,
            tags=tags,
            timeout_ms=timeout_ms,
        )

        return tool_input
