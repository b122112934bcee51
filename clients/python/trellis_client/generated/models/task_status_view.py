from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast
from uuid import UUID

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from typing_extensions import Self

from ..models.task_status import TaskStatus
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.child_task import ChildTask
    from ..models.counters_view import CountersView
    from ..models.llm_usage_view import LlmUsageView
    from ..models.step_counts_view import StepCountsView
    from ..models.task_limits_view import TaskLimitsView
    from ..models.task_status_view_context import TaskStatusViewContext
    from ..models.task_status_view_error_type_0 import TaskStatusViewErrorType0
    from ..models.task_status_view_metadata import TaskStatusViewMetadata
    from ..models.task_status_view_runtime_metadata import TaskStatusViewRuntimeMetadata


T = TypeVar("T", bound="TaskStatusView")


@_attrs_define
class TaskStatusView:
    """`GET /tasks/{id}`.

    Attributes:
        children (list[ChildTask]): Tasks this task's steps started, oldest first.
        context (TaskStatusViewContext): The caller's context, readable as `${context.key}`.
        cost (float): LLM calls spent on this task (zeros with the rules brain).
            What its LLM calls (priced by `/model-prices`) and its tools' reported costs came to.
        counters (CountersView): The recovery counters of a task (and of its current step).
        created_at (datetime.datetime):
        description (str):
        limits (TaskLimitsView): The limits a task runs under (the submit's `limits` over the configured defaults).
        llm_usage (LlmUsageView): A task's LLM usage.
        metadata (TaskStatusViewMetadata):
        plan_version (int):
        priority (int):
        round_ (int): The reflection round (1 until the first evaluation asks for another).
        runtime_metadata (TaskStatusViewRuntimeMetadata):
        status (TaskStatus):
        steps (StepCountsView): Steps of the current plan version by status (`total` leaves superseded ones out).
        task_id (UUID):
        updated_at (datetime.datetime):
        concurrency_key (None | str | Unset): The fairness key the claim takes turns between (none: the shared key).
        current_step (None | str | Unset): The step to look at: the first failed one, else running, else ready.
        deadline_at (datetime.datetime | None | Unset): Wall-time deadline (`limits.task_timeout_secs` after submission,
            or after `run_at`),
            if any.
        error (None | TaskStatusViewErrorType0 | Unset): Why the task failed, when it did (`code`, `message`).
        final_score (float | None | Unset):
        finished_at (datetime.datetime | None | Unset):
        parent_task_id (None | Unset | UUID): The task whose step started this one (the built-in `task`), if any.
        run_at (datetime.datetime | None | Unset): A delayed start (`run_at` / `delay_secs`): nothing of the task runs
            before it.
        stop_reason (None | str | Unset):
    """

    children: list[ChildTask]
    context: TaskStatusViewContext
    cost: float
    counters: CountersView
    created_at: datetime.datetime
    description: str
    limits: TaskLimitsView
    llm_usage: LlmUsageView
    metadata: TaskStatusViewMetadata
    plan_version: int
    priority: int
    round_: int
    runtime_metadata: TaskStatusViewRuntimeMetadata
    status: TaskStatus
    steps: StepCountsView
    task_id: UUID
    updated_at: datetime.datetime
    concurrency_key: None | str | Unset = UNSET
    current_step: None | str | Unset = UNSET
    deadline_at: datetime.datetime | None | Unset = UNSET
    error: None | TaskStatusViewErrorType0 | Unset = UNSET
    final_score: float | None | Unset = UNSET
    finished_at: datetime.datetime | None | Unset = UNSET
    parent_task_id: None | Unset | UUID = UNSET
    run_at: datetime.datetime | None | Unset = UNSET
    stop_reason: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.task_status_view_error_type_0 import TaskStatusViewErrorType0

        children = []
        for children_item_data in self.children:
            children_item = children_item_data.to_dict()
            children.append(children_item)

        context = self.context.to_dict()

        cost = self.cost

        counters = self.counters.to_dict()

        created_at = self.created_at.isoformat()

        description = self.description

        limits = self.limits.to_dict()

        llm_usage = self.llm_usage.to_dict()

        metadata = self.metadata.to_dict()

        plan_version = self.plan_version

        priority = self.priority

        round_ = self.round_

        runtime_metadata = self.runtime_metadata.to_dict()

        status = self.status.value

        steps = self.steps.to_dict()

        task_id = str(self.task_id)

        updated_at = self.updated_at.isoformat()

        concurrency_key: None | str | Unset
        if isinstance(self.concurrency_key, Unset):
            concurrency_key = UNSET
        else:
            concurrency_key = self.concurrency_key

        current_step: None | str | Unset
        if isinstance(self.current_step, Unset):
            current_step = UNSET
        else:
            current_step = self.current_step

        deadline_at: None | str | Unset
        if isinstance(self.deadline_at, Unset):
            deadline_at = UNSET
        elif isinstance(self.deadline_at, datetime.datetime):
            deadline_at = self.deadline_at.isoformat()
        else:
            deadline_at = self.deadline_at

        error: dict[str, Any] | None | Unset
        if isinstance(self.error, Unset):
            error = UNSET
        elif isinstance(self.error, TaskStatusViewErrorType0):
            error = self.error.to_dict()
        else:
            error = self.error

        final_score: float | None | Unset
        if isinstance(self.final_score, Unset):
            final_score = UNSET
        else:
            final_score = self.final_score

        finished_at: None | str | Unset
        if isinstance(self.finished_at, Unset):
            finished_at = UNSET
        elif isinstance(self.finished_at, datetime.datetime):
            finished_at = self.finished_at.isoformat()
        else:
            finished_at = self.finished_at

        parent_task_id: None | str | Unset
        if isinstance(self.parent_task_id, Unset):
            parent_task_id = UNSET
        elif isinstance(self.parent_task_id, UUID):
            parent_task_id = str(self.parent_task_id)
        else:
            parent_task_id = self.parent_task_id

        run_at: None | str | Unset
        if isinstance(self.run_at, Unset):
            run_at = UNSET
        elif isinstance(self.run_at, datetime.datetime):
            run_at = self.run_at.isoformat()
        else:
            run_at = self.run_at

        stop_reason: None | str | Unset
        if isinstance(self.stop_reason, Unset):
            stop_reason = UNSET
        else:
            stop_reason = self.stop_reason

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "children": children,
                "context": context,
                "cost": cost,
                "counters": counters,
                "created_at": created_at,
                "description": description,
                "limits": limits,
                "llm_usage": llm_usage,
                "metadata": metadata,
                "plan_version": plan_version,
                "priority": priority,
                "round": round_,
                "runtime_metadata": runtime_metadata,
                "status": status,
                "steps": steps,
                "task_id": task_id,
                "updated_at": updated_at,
            }
        )
        if concurrency_key is not UNSET:
            field_dict["concurrency_key"] = concurrency_key
        if current_step is not UNSET:
            field_dict["current_step"] = current_step
        if deadline_at is not UNSET:
            field_dict["deadline_at"] = deadline_at
        if error is not UNSET:
            field_dict["error"] = error
        if final_score is not UNSET:
            field_dict["final_score"] = final_score
        if finished_at is not UNSET:
            field_dict["finished_at"] = finished_at
        if parent_task_id is not UNSET:
            field_dict["parent_task_id"] = parent_task_id
        if run_at is not UNSET:
            field_dict["run_at"] = run_at
        if stop_reason is not UNSET:
            field_dict["stop_reason"] = stop_reason

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.child_task import ChildTask
        from ..models.counters_view import CountersView
        from ..models.llm_usage_view import LlmUsageView
        from ..models.step_counts_view import StepCountsView
        from ..models.task_limits_view import TaskLimitsView
        from ..models.task_status_view_context import TaskStatusViewContext
        from ..models.task_status_view_error_type_0 import TaskStatusViewErrorType0
        from ..models.task_status_view_metadata import TaskStatusViewMetadata
        from ..models.task_status_view_runtime_metadata import (
            TaskStatusViewRuntimeMetadata,
        )

        d = dict(src_dict)
        children = []
        _children = d.pop("children")
        for children_item_data in _children:
            children_item = ChildTask.from_dict(children_item_data)

            children.append(children_item)

        context = TaskStatusViewContext.from_dict(d.pop("context"))

        cost = d.pop("cost")

        counters = CountersView.from_dict(d.pop("counters"))

        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))

        description = d.pop("description")

        limits = TaskLimitsView.from_dict(d.pop("limits"))

        llm_usage = LlmUsageView.from_dict(d.pop("llm_usage"))

        metadata = TaskStatusViewMetadata.from_dict(d.pop("metadata"))

        plan_version = d.pop("plan_version")

        priority = d.pop("priority")

        round_ = d.pop("round")

        runtime_metadata = TaskStatusViewRuntimeMetadata.from_dict(
            d.pop("runtime_metadata")
        )

        status = TaskStatus(d.pop("status"))

        steps = StepCountsView.from_dict(d.pop("steps"))

        task_id = UUID(d.pop("task_id"))

        updated_at = datetime.datetime.fromisoformat(d.pop("updated_at"))

        def _parse_concurrency_key(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        concurrency_key = _parse_concurrency_key(d.pop("concurrency_key", UNSET))

        def _parse_current_step(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        current_step = _parse_current_step(d.pop("current_step", UNSET))

        def _parse_deadline_at(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                deadline_at_type_0 = datetime.datetime.fromisoformat(data)

                return deadline_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        deadline_at = _parse_deadline_at(d.pop("deadline_at", UNSET))

        def _parse_error(data: object) -> None | TaskStatusViewErrorType0 | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                error_type_0 = TaskStatusViewErrorType0.from_dict(data)

                return error_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | TaskStatusViewErrorType0 | Unset, data)

        error = _parse_error(d.pop("error", UNSET))

        def _parse_final_score(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        final_score = _parse_final_score(d.pop("final_score", UNSET))

        def _parse_finished_at(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                finished_at_type_0 = datetime.datetime.fromisoformat(data)

                return finished_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        finished_at = _parse_finished_at(d.pop("finished_at", UNSET))

        def _parse_parent_task_id(data: object) -> None | Unset | UUID:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                parent_task_id_type_0 = UUID(data)

                return parent_task_id_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | Unset | UUID, data)

        parent_task_id = _parse_parent_task_id(d.pop("parent_task_id", UNSET))

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

        def _parse_stop_reason(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        stop_reason = _parse_stop_reason(d.pop("stop_reason", UNSET))

        task_status_view = cls(
            children=children,
            context=context,
            cost=cost,
            counters=counters,
            created_at=created_at,
            description=description,
            limits=limits,
            llm_usage=llm_usage,
            metadata=metadata,
            plan_version=plan_version,
            priority=priority,
            round_=round_,
            runtime_metadata=runtime_metadata,
            status=status,
            steps=steps,
            task_id=task_id,
            updated_at=updated_at,
            concurrency_key=concurrency_key,
            current_step=current_step,
            deadline_at=deadline_at,
            error=error,
            final_score=final_score,
            finished_at=finished_at,
            parent_task_id=parent_task_id,
            run_at=run_at,
            stop_reason=stop_reason,
        )

        task_status_view.additional_properties = d
        return task_status_view

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
