from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from typing_extensions import Self

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.limits import Limits
    from ..models.plan import Plan
    from ..models.submit_task_context_type_0 import SubmitTaskContextType0
    from ..models.submit_task_input_type_0 import SubmitTaskInputType0
    from ..models.submit_task_metadata_type_0 import SubmitTaskMetadataType0


T = TypeVar("T", bound="SubmitTask")


@_attrs_define
class SubmitTask:
    """A task: a plan, or a template with its input (not both), or — with a planning brain configured — a description
    alone. A body that breaks one of these rules is a 422 naming it.

        Attributes:
            concurrency_key (None | str | Unset): The fairness key (1 to 128 characters, e.g. a customer id): within a
                priority, the claim
                serves keys in turn, in proportion to their weights (`/key-limits`), not to their
                backlogs. Tasks without one share one key.
            context (None | SubmitTaskContextType0 | Unset): The caller's context, given to every brain prompt and readable
                as `${context.key}`.
            delay_secs (float | None | Unset): As `run_at`, this many seconds from now (the server's clock).
            description (str | Unset): Required unless `template` is given (the template's description is then the default).
            idempotency_key (None | str | Unset): A second submit with the same key returns the first task (200, `created`
                false).
            input_ (None | SubmitTaskInputType0 | Unset): The template's input, checked against its `input_schema`; only
                with `template`.
            limits (Limits | None | Unset):
            metadata (None | SubmitTaskMetadataType0 | Unset):
            plan (None | Plan | Unset):
            priority (int | None | Unset): Higher runs first.
            run_at (datetime.datetime | None | Unset): Accepted now, but nothing of the task runs before this RFC 3339 time
                (not with
                `delay_secs`); its deadline counts from then.
            template (None | str | Unset): A workflow template's id, instead of `plan`: its plan with `input` put in its
                `${input.key}` placeholders becomes version 1 (origin `template:<id>`).
            webhook (Any | Unset): The task's own completion webhook: a URL, or `{"url", "events": [event kinds]}`
                (default: the terminal kinds and `intervention_required`); signed with the server's
                `[webhooks] signing_secret` (a 422 when none is configured).
    """

    concurrency_key: None | str | Unset = UNSET
    context: None | SubmitTaskContextType0 | Unset = UNSET
    delay_secs: float | None | Unset = UNSET
    description: str | Unset = UNSET
    idempotency_key: None | str | Unset = UNSET
    input_: None | SubmitTaskInputType0 | Unset = UNSET
    limits: Limits | None | Unset = UNSET
    metadata: None | SubmitTaskMetadataType0 | Unset = UNSET
    plan: None | Plan | Unset = UNSET
    priority: int | None | Unset = UNSET
    run_at: datetime.datetime | None | Unset = UNSET
    template: None | str | Unset = UNSET
    webhook: Any | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        from ..models.limits import Limits
        from ..models.plan import Plan
        from ..models.submit_task_context_type_0 import SubmitTaskContextType0
        from ..models.submit_task_input_type_0 import SubmitTaskInputType0
        from ..models.submit_task_metadata_type_0 import SubmitTaskMetadataType0

        concurrency_key: None | str | Unset
        if isinstance(self.concurrency_key, Unset):
            concurrency_key = UNSET
        else:
            concurrency_key = self.concurrency_key

        context: dict[str, Any] | None | Unset
        if isinstance(self.context, Unset):
            context = UNSET
        elif isinstance(self.context, SubmitTaskContextType0):
            context = self.context.to_dict()
        else:
            context = self.context

        delay_secs: float | None | Unset
        if isinstance(self.delay_secs, Unset):
            delay_secs = UNSET
        else:
            delay_secs = self.delay_secs

        description = self.description

        idempotency_key: None | str | Unset
        if isinstance(self.idempotency_key, Unset):
            idempotency_key = UNSET
        else:
            idempotency_key = self.idempotency_key

        input_: dict[str, Any] | None | Unset
        if isinstance(self.input_, Unset):
            input_ = UNSET
        elif isinstance(self.input_, SubmitTaskInputType0):
            input_ = self.input_.to_dict()
        else:
            input_ = self.input_

        limits: dict[str, Any] | None | Unset
        if isinstance(self.limits, Unset):
            limits = UNSET
        elif isinstance(self.limits, Limits):
            limits = self.limits.to_dict()
        else:
            limits = self.limits

        metadata: dict[str, Any] | None | Unset
        if isinstance(self.metadata, Unset):
            metadata = UNSET
        elif isinstance(self.metadata, SubmitTaskMetadataType0):
            metadata = self.metadata.to_dict()
        else:
            metadata = self.metadata

        plan: dict[str, Any] | None | Unset
        if isinstance(self.plan, Unset):
            plan = UNSET
        elif isinstance(self.plan, Plan):
            plan = self.plan.to_dict()
        else:
            plan = self.plan

        priority: int | None | Unset
        if isinstance(self.priority, Unset):
            priority = UNSET
        else:
            priority = self.priority

        run_at: None | str | Unset
        if isinstance(self.run_at, Unset):
            run_at = UNSET
        elif isinstance(self.run_at, datetime.datetime):
            run_at = self.run_at.isoformat()
        else:
            run_at = self.run_at

        template: None | str | Unset
        if isinstance(self.template, Unset):
            template = UNSET
        else:
            template = self.template

        webhook = self.webhook

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if concurrency_key is not UNSET:
            field_dict["concurrency_key"] = concurrency_key
        if context is not UNSET:
            field_dict["context"] = context
        if delay_secs is not UNSET:
            field_dict["delay_secs"] = delay_secs
        if description is not UNSET:
            field_dict["description"] = description
        if idempotency_key is not UNSET:
            field_dict["idempotency_key"] = idempotency_key
        if input_ is not UNSET:
            field_dict["input"] = input_
        if limits is not UNSET:
            field_dict["limits"] = limits
        if metadata is not UNSET:
            field_dict["metadata"] = metadata
        if plan is not UNSET:
            field_dict["plan"] = plan
        if priority is not UNSET:
            field_dict["priority"] = priority
        if run_at is not UNSET:
            field_dict["run_at"] = run_at
        if template is not UNSET:
            field_dict["template"] = template
        if webhook is not UNSET:
            field_dict["webhook"] = webhook

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.limits import Limits
        from ..models.plan import Plan
        from ..models.submit_task_context_type_0 import SubmitTaskContextType0
        from ..models.submit_task_input_type_0 import SubmitTaskInputType0
        from ..models.submit_task_metadata_type_0 import SubmitTaskMetadataType0

        d = dict(src_dict)

        def _parse_concurrency_key(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        concurrency_key = _parse_concurrency_key(d.pop("concurrency_key", UNSET))

        def _parse_context(data: object) -> None | SubmitTaskContextType0 | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                context_type_0 = SubmitTaskContextType0.from_dict(data)

                return context_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | SubmitTaskContextType0 | Unset, data)

        context = _parse_context(d.pop("context", UNSET))

        def _parse_delay_secs(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        delay_secs = _parse_delay_secs(d.pop("delay_secs", UNSET))

        description = d.pop("description", UNSET)

        def _parse_idempotency_key(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        idempotency_key = _parse_idempotency_key(d.pop("idempotency_key", UNSET))

        def _parse_input_(data: object) -> None | SubmitTaskInputType0 | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                input_type_0 = SubmitTaskInputType0.from_dict(data)

                return input_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | SubmitTaskInputType0 | Unset, data)

        input_ = _parse_input_(d.pop("input", UNSET))

        def _parse_limits(data: object) -> Limits | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                limits_type_0 = Limits.from_dict(data)

                return limits_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(Limits | None | Unset, data)

        limits = _parse_limits(d.pop("limits", UNSET))

        def _parse_metadata(data: object) -> None | SubmitTaskMetadataType0 | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                metadata_type_0 = SubmitTaskMetadataType0.from_dict(data)

                return metadata_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | SubmitTaskMetadataType0 | Unset, data)

        metadata = _parse_metadata(d.pop("metadata", UNSET))

        def _parse_plan(data: object) -> None | Plan | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                plan_type_0 = Plan.from_dict(data)

                return plan_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | Plan | Unset, data)

        plan = _parse_plan(d.pop("plan", UNSET))

        def _parse_priority(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        priority = _parse_priority(d.pop("priority", UNSET))

        def _parse_run_at(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                run_at_type_0 = datetime.datetime.fromisoformat(data)

                return run_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        run_at = _parse_run_at(d.pop("run_at", UNSET))

        def _parse_template(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        template = _parse_template(d.pop("template", UNSET))

        webhook = d.pop("webhook", UNSET)

        submit_task = cls(
            concurrency_key=concurrency_key,
            context=context,
            delay_secs=delay_secs,
            description=description,
            idempotency_key=idempotency_key,
            input_=input_,
            limits=limits,
            metadata=metadata,
            plan=plan,
            priority=priority,
            run_at=run_at,
            template=template,
            webhook=webhook,
        )

        return submit_task
