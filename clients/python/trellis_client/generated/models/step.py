from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from typing_extensions import Self

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.action import Action
    from ..models.step_map import StepMap
    from ..models.step_parameters import StepParameters


T = TypeVar("T", bound="Step")


@_attrs_define
class Step:
    """One step of a plan: a tool call, or `actions` run in order.

    Attributes:
        id (str): The step's id in its plan; not one of metadata, context, input.
        actions (list[Action] | Unset):
        dependencies (list[str] | Unset):
        expected_output (str | Unset):
        map_ (None | StepMap | Unset):
        name (str | Unset):
        optional (bool | Unset):
        parameters (StepParameters | Unset):
        tool (str | Unset): Tool id; may be empty when the step only runs `actions`.
    """

    id: str
    actions: list[Action] | Unset = UNSET
    dependencies: list[str] | Unset = UNSET
    expected_output: str | Unset = UNSET
    map_: None | StepMap | Unset = UNSET
    name: str | Unset = UNSET
    optional: bool | Unset = UNSET
    parameters: StepParameters | Unset = UNSET
    tool: str | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        from ..models.step_map import StepMap

        id = self.id

        actions: list[dict[str, Any]] | Unset = UNSET
        if not isinstance(self.actions, Unset):
            actions = []
            for actions_item_data in self.actions:
                actions_item = actions_item_data.to_dict()
                actions.append(actions_item)

        dependencies: list[str] | Unset = UNSET
        if not isinstance(self.dependencies, Unset):
            dependencies = self.dependencies

        expected_output = self.expected_output

        map_: dict[str, Any] | None | Unset
        if isinstance(self.map_, Unset):
            map_ = UNSET
        elif isinstance(self.map_, StepMap):
            map_ = self.map_.to_dict()
        else:
            map_ = self.map_

        name = self.name

        optional = self.optional

        parameters: dict[str, Any] | Unset = UNSET
        if not isinstance(self.parameters, Unset):
            parameters = self.parameters.to_dict()

        tool = self.tool

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "id": id,
            }
        )
        if actions is not UNSET:
            field_dict["actions"] = actions
        if dependencies is not UNSET:
            field_dict["dependencies"] = dependencies
        if expected_output is not UNSET:
            field_dict["expected_output"] = expected_output
        if map_ is not UNSET:
            field_dict["map"] = map_
        if name is not UNSET:
            field_dict["name"] = name
        if optional is not UNSET:
            field_dict["optional"] = optional
        if parameters is not UNSET:
            field_dict["parameters"] = parameters
        if tool is not UNSET:
            field_dict["tool"] = tool

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.action import Action
        from ..models.step_map import StepMap
        from ..models.step_parameters import StepParameters

        d = dict(src_dict)
        id = d.pop("id")

        _actions = d.pop("actions", UNSET)
        actions: list[Action] | Unset = UNSET
        if _actions is not UNSET:
            actions = []
            for actions_item_data in _actions:
                actions_item = Action.from_dict(actions_item_data)

                actions.append(actions_item)

        dependencies = cast(list[str], d.pop("dependencies", UNSET))

        expected_output = d.pop("expected_output", UNSET)

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

        name = d.pop("name", UNSET)

        optional = d.pop("optional", UNSET)

        _parameters = d.pop("parameters", UNSET)
        parameters: StepParameters | Unset
        if isinstance(_parameters, Unset):
            parameters = UNSET
        else:
            parameters = StepParameters.from_dict(_parameters)

        tool = d.pop("tool", UNSET)

        step = cls(
            id=id,
            actions=actions,
            dependencies=dependencies,
            expected_output=expected_output,
            map_=map_,
            name=name,
            optional=optional,
            parameters=parameters,
            tool=tool,
        )

        return step
