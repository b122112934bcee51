from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from typing_extensions import Self

from ..models.step_status import StepStatus
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.map_progress import MapProgress
    from ..models.plan_step_view_actions_item import PlanStepViewActionsItem
    from ..models.plan_step_view_error_type_0 import PlanStepViewErrorType0
    from ..models.plan_step_view_param_overrides import PlanStepViewParamOverrides
    from ..models.plan_step_view_parameters import PlanStepViewParameters
    from ..models.step_map import StepMap


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
        item_index (int | None | Unset): An item of a map: its index in the map's list (its map step is the id before
            `[`).
        map_ (None | StepMap | Unset):
        map_progress (MapProgress | None | Unset):
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
    item_index: int | None | Unset = UNSET
    map_: None | StepMap | Unset = UNSET
    map_progress: MapProgress | None | Unset = UNSET
    output: Any | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.map_progress import MapProgress
        from ..models.plan_step_view_error_type_0 import PlanStepViewErrorType0
        from ..models.step_map import StepMap

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

        item_index: int | None | Unset
        if isinstance(self.item_index, Unset):
            item_index = UNSET
        else:
            item_index = self.item_index

        map_: dict[str, Any] | None | Unset
        if isinstance(self.map_, Unset):
            map_ = UNSET
        elif isinstance(self.map_, StepMap):
            map_ = self.map_.to_dict()
        else:
            map_ = self.map_

        map_progress: dict[str, Any] | None | Unset
        if isinstance(self.map_progress, Unset):
            map_progress = UNSET
        elif isinstance(self.map_progress, MapProgress):
            map_progress = self.map_progress.to_dict()
        else:
            map_progress = self.map_progress

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
        if item_index is not UNSET:
            field_dict["item_index"] = item_index
        if map_ is not UNSET:
            field_dict["map"] = map_
        if map_progress is not UNSET:
            field_dict["map_progress"] = map_progress
        if output is not UNSET:
            field_dict["output"] = output

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.map_progress import MapProgress
        from ..models.plan_step_view_actions_item import PlanStepViewActionsItem
        from ..models.plan_step_view_error_type_0 import PlanStepViewErrorType0
        from ..models.plan_step_view_param_overrides import PlanStepViewParamOverrides
        from ..models.plan_step_view_parameters import PlanStepViewParameters
        from ..models.step_map import StepMap

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

        def _parse_item_index(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        item_index = _parse_item_index(d.pop("item_index", UNSET))

        def _parse_map_(data: object) -> None | StepMap | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                map_type_0 = StepMap.from_dict(data)

                return map_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | StepMap | Unset, data)

        map_ = _parse_map_(d.pop("map", UNSET))

        def _parse_map_progress(data: object) -> MapProgress | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                map_progress_type_0 = MapProgress.from_dict(data)

                return map_progress_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(MapProgress | None | Unset, data)

        map_progress = _parse_map_progress(d.pop("map_progress", UNSET))

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
            item_index=item_index,
            map_=map_,
            map_progress=map_progress,
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
