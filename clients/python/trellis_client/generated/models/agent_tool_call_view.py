from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from typing_extensions import Self

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.agent_tool_call_view_parameters_type_0 import (
        AgentToolCallViewParametersType0,
    )


T = TypeVar("T", bound="AgentToolCallView")


@_attrs_define
class AgentToolCallView:
    """A tool call the model asked for in a turn.

    Attributes:
        id (str): The model's `tool_call_id`.
        status (str): Its step's status, or `refused` (the model was told why).
        parameters (AgentToolCallViewParametersType0 | None | Unset): Its arguments (null when refused).
        refused (None | str | Unset): Why it was refused (an unknown function, arguments that are not an object, too
            many
            calls in one turn).
        step_id (None | str | Unset): The step it runs as, `<agent step>.<turn>.<n>` (null when refused).
        tool (None | str | Unset): The tool it called (null when the call was refused before it ran).
    """

    id: str
    status: str
    parameters: AgentToolCallViewParametersType0 | None | Unset = UNSET
    refused: None | str | Unset = UNSET
    step_id: None | str | Unset = UNSET
    tool: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.agent_tool_call_view_parameters_type_0 import (
            AgentToolCallViewParametersType0,
        )

        id = self.id

        status = self.status

        parameters: dict[str, Any] | None | Unset
        if isinstance(self.parameters, Unset):
            parameters = UNSET
        elif isinstance(self.parameters, AgentToolCallViewParametersType0):
            parameters = self.parameters.to_dict()
        else:
            parameters = self.parameters

        refused: None | str | Unset
        if isinstance(self.refused, Unset):
            refused = UNSET
        else:
            refused = self.refused

        step_id: None | str | Unset
        if isinstance(self.step_id, Unset):
            step_id = UNSET
        else:
            step_id = self.step_id

        tool: None | str | Unset
        if isinstance(self.tool, Unset):
            tool = UNSET
        else:
            tool = self.tool

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "id": id,
                "status": status,
            }
        )
        if parameters is not UNSET:
            field_dict["parameters"] = parameters
        if refused is not UNSET:
            field_dict["refused"] = refused
        if step_id is not UNSET:
            field_dict["step_id"] = step_id
        if tool is not UNSET:
            field_dict["tool"] = tool

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.agent_tool_call_view_parameters_type_0 import (
            AgentToolCallViewParametersType0,
        )

        d = dict(src_dict)
        id = d.pop("id")

        status = d.pop("status")

        def _parse_parameters(
            data: object,
        ) -> AgentToolCallViewParametersType0 | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                parameters_type_0 = AgentToolCallViewParametersType0.from_dict(data)

                return parameters_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(AgentToolCallViewParametersType0 | None | Unset, data)

        parameters = _parse_parameters(d.pop("parameters", UNSET))

        def _parse_refused(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        refused = _parse_refused(d.pop("refused", UNSET))

        def _parse_step_id(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        step_id = _parse_step_id(d.pop("step_id", UNSET))

        def _parse_tool(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        tool = _parse_tool(d.pop("tool", UNSET))

        agent_tool_call_view = cls(
            id=id,
            status=status,
            parameters=parameters,
            refused=refused,
            step_id=step_id,
            tool=tool,
        )

        agent_tool_call_view.additional_properties = d
        return agent_tool_call_view

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
