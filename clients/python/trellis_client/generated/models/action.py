from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from typing_extensions import Self

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.action_parameters import ActionParameters


T = TypeVar("T", bound="Action")


@_attrs_define
class Action:
    """One call of a step's `actions`.

    Attributes:
        id (str):
        tool (str):
        name (str | Unset):
        parameters (ActionParameters | Unset):
    """

    id: str
    tool: str
    name: str | Unset = UNSET
    parameters: ActionParameters | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        id = self.id

        tool = self.tool

        name = self.name

        parameters: dict[str, Any] | Unset = UNSET
        if not isinstance(self.parameters, Unset):
            parameters = self.parameters.to_dict()

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "id": id,
                "tool": tool,
            }
        )
        if name is not UNSET:
            field_dict["name"] = name
        if parameters is not UNSET:
            field_dict["parameters"] = parameters

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.action_parameters import ActionParameters

        d = dict(src_dict)
        id = d.pop("id")

        tool = d.pop("tool")

        name = d.pop("name", UNSET)

        _parameters = d.pop("parameters", UNSET)
        parameters: ActionParameters | Unset
        if isinstance(_parameters, Unset):
            parameters = UNSET
        else:
            parameters = ActionParameters.from_dict(_parameters)

        action = cls(
            id=id,
            tool=tool,
            name=name,
            parameters=parameters,
        )

        return action
