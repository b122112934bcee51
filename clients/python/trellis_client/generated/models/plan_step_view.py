from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from typing_extensions import Self

from ..models.step_status import StepStatus
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.plan_step_view_actions_item import PlanStepViewActionsItem
    from ..models.plan_step_view_error_type_0 import PlanStepViewErrorType0
    from ..models.plan_step_view_param_overrides import PlanStepViewParamOverrides
    from ..models.plan_step_view_parameters import PlanStepViewParameters


T = TypeVar("T", bound="PlanStepView")


@_attrs_define
class PlanStepView:
    """A step of a plan version (`GET /tasks/{id}/plan`).

    Attributes:
        actions (list[PlanStepViewActionsItem]):
        attempts (int):
        dependencies (list[str]):
        expected_output (str):
        id (str):
        name (str):
        optional (bool):
        param_overrides (PlanStepViewParamOverrides): Parameters merged over `parameters` at its next attempt: a tier 1
            retry's, a resume's
            overrides, or an approver's edit (redacted like `parameters`).
        parameters (PlanStepViewParameters): Credential-like values are redacted.
        retry_count (int):
        status (StepStatus):
        tool (str): The tool it runs (a recovery may have switched it).
        error (None | PlanStepViewErrorType0 | Unset):
        output (Any | Unset): the tool's output: any JSON value (null while there is none)
    """

    actions: list[PlanStepViewActionsItem]
    attempts: int
    dependencies: list[str]
    expected_output: str
    id: str
    name: str
    optional: bool
    param_overrides: PlanStepViewParamOverrides
    parameters: PlanStepViewParameters
    retry_count: int
    status: StepStatus
    tool: str
    error: None | PlanStepViewErrorType0 | Unset = UNSET
    output: Any | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.plan_step_view_error_type_0 import PlanStepViewErrorType0

        actions = []
        for actions_item_data in self.actions:
            actions_item = actions_item_data.to_dict()
            actions.append(actions_item)

        attempts = self.attempts

        dependencies = self.dependencies

        expected_output = self.expected_output

        id = self.id

        name = self.name

        optional = self.optional

        param_overrides = self.param_overrides.to_dict()

        parameters = self.parameters.to_dict()

        retry_count = self.retry_count

        status = self.status.value

        tool = self.tool

        error: dict[str, Any] | None | Unset
        if isinstance(self.error, Unset):
            error = UNSET
        elif isinstance(self.error, PlanStepViewErrorType0):
            error = self.error.to_dict()
        else:
            error = self.error

        output = self.output

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "actions": actions,
                "attempts": attempts,
                "dependencies": dependencies,
                "expected_output": expected_output,
                "id": id,
                "name": name,
                "optional": optional,
                "param_overrides": param_overrides,
                "parameters": parameters,
                "retry_count": retry_count,
                "status": status,
                "tool": tool,
            }
        )
        if error is not UNSET:
            field_dict["error"] = error
        if output is not UNSET:
            field_dict["output"] = output

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.plan_step_view_actions_item import PlanStepViewActionsItem
        from ..models.plan_step_view_error_type_0 import PlanStepViewErrorType0
        from ..models.plan_step_view_param_overrides import PlanStepViewParamOverrides
        from ..models.plan_step_view_parameters import PlanStepViewParameters

        d = dict(src_dict)
        actions = []
        _actions = d.pop("actions")
        for actions_item_data in _actions:
            actions_item = PlanStepViewActionsItem.from_dict(actions_item_data)

            actions.append(actions_item)

        attempts = d.pop("attempts")

        dependencies = cast(list[str], d.pop("dependencies"))

        expected_output = d.pop("expected_output")

        id = d.pop("id")

        name = d.pop("name")

        optional = d.pop("optional")

        param_overrides = PlanStepViewParamOverrides.from_dict(d.pop("param_overrides"))

        parameters = PlanStepViewParameters.from_dict(d.pop("parameters"))

        retry_count = d.pop("retry_count")

        status = StepStatus(d.pop("status"))

        tool = d.pop("tool")

        def _parse_error(data: object) -> None | PlanStepViewErrorType0 | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                error_type_0 = PlanStepViewErrorType0.from_dict(data)

                return error_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | PlanStepViewErrorType0 | Unset, data)

        error = _parse_error(d.pop("error", UNSET))

        output = d.pop("output", UNSET)

        plan_step_view = cls(
            actions=actions,
            attempts=attempts,
            dependencies=dependencies,
            expected_output=expected_output,
            id=id,
            name=name,
            optional=optional,
            param_overrides=param_overrides,
            parameters=parameters,
            retry_count=retry_count,
            status=status,
            tool=tool,
            error=error,
            output=output,
        )

        plan_step_view.additional_properties = d
        return plan_step_view

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
