from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast
from uuid import UUID

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from typing_extensions import Self

from ..models.task_status import TaskStatus
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.task_result_error_type_0 import TaskResultErrorType0
    from ..models.task_result_outputs import TaskResultOutputs
    from ..models.usage import Usage


T = TypeVar("T", bound="TaskResult")


@_attrs_define
class TaskResult:
    """`GET /tasks/{id}/result`.

    Attributes:
        duration_ms (int):
        finished (bool): Whether the task has ended (succeeded, failed or cancelled).
        is_success (bool):
        outputs (TaskResultOutputs): Each succeeded step's output of the current plan version, by step id.
        status (TaskStatus):
        task_id (UUID):
        total_rounds (int):
        usage (Usage): LLM tokens and tool calls (attempts of a tool).
        usage_total (Usage): LLM tokens and tool calls (attempts of a tool).
        error (None | TaskResultErrorType0 | Unset):
        final_score (float | None | Unset):
        stop_reason (None | str | Unset):
    """

    duration_ms: int
    finished: bool
    is_success: bool
    outputs: TaskResultOutputs
    status: TaskStatus
    task_id: UUID
    total_rounds: int
    usage: Usage
    usage_total: Usage
    error: None | TaskResultErrorType0 | Unset = UNSET
    final_score: float | None | Unset = UNSET
    stop_reason: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.task_result_error_type_0 import TaskResultErrorType0

        duration_ms = self.duration_ms

        finished = self.finished

        is_success = self.is_success

        outputs = self.outputs.to_dict()

        status = self.status.value

        task_id = str(self.task_id)

        total_rounds = self.total_rounds

        usage = self.usage.to_dict()

        usage_total = self.usage_total.to_dict()

        error: dict[str, Any] | None | Unset
        if isinstance(self.error, Unset):
            error = UNSET
        elif isinstance(self.error, TaskResultErrorType0):
            error = self.error.to_dict()
        else:
            error = self.error

        final_score: float | None | Unset
        if isinstance(self.final_score, Unset):
            final_score = UNSET
        else:
            final_score = self.final_score

        stop_reason: None | str | Unset
        if isinstance(self.stop_reason, Unset):
            stop_reason = UNSET
        else:
            stop_reason = self.stop_reason

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "duration_ms": duration_ms,
                "finished": finished,
                "is_success": is_success,
                "outputs": outputs,
                "status": status,
                "task_id": task_id,
                "total_rounds": total_rounds,
                "usage": usage,
                "usage_total": usage_total,
            }
        )
        if error is not UNSET:
            field_dict["error"] = error
        if final_score is not UNSET:
            field_dict["final_score"] = final_score
        if stop_reason is not UNSET:
            field_dict["stop_reason"] = stop_reason

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.task_result_error_type_0 import TaskResultErrorType0
        from ..models.task_result_outputs import TaskResultOutputs
        from ..models.usage import Usage

        d = dict(src_dict)
        duration_ms = d.pop("duration_ms")

        finished = d.pop("finished")

        is_success = d.pop("is_success")

        outputs = TaskResultOutputs.from_dict(d.pop("outputs"))

        status = TaskStatus(d.pop("status"))

        task_id = UUID(d.pop("task_id"))

        total_rounds = d.pop("total_rounds")

        usage = Usage.from_dict(d.pop("usage"))

        usage_total = Usage.from_dict(d.pop("usage_total"))

        def _parse_error(data: object) -> None | TaskResultErrorType0 | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                error_type_0 = TaskResultErrorType0.from_dict(data)

                return error_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | TaskResultErrorType0 | Unset, data)

        error = _parse_error(d.pop("error", UNSET))

        def _parse_final_score(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        final_score = _parse_final_score(d.pop("final_score", UNSET))

        def _parse_stop_reason(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        stop_reason = _parse_stop_reason(d.pop("stop_reason", UNSET))

        task_result = cls(
            duration_ms=duration_ms,
            finished=finished,
            is_success=is_success,
            outputs=outputs,
            status=status,
            task_id=task_id,
            total_rounds=total_rounds,
            usage=usage,
            usage_total=usage_total,
            error=error,
            final_score=final_score,
            stop_reason=stop_reason,
        )

        task_result.additional_properties = d
        return task_result

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
