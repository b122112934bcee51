from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from typing_extensions import Self

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.agent_tool_call_view import AgentToolCallView
    from ..models.agent_turn_view_messages_item import AgentTurnViewMessagesItem
    from ..models.agent_turn_view_usage import AgentTurnViewUsage


T = TypeVar("T", bound="AgentTurnView")


@_attrs_define
class AgentTurnView:
    """One turn of an agent step: one LLM call.

    Attributes:
        messages (list[AgentTurnViewMessagesItem]): The messages the turn added to the transcript (OpenAI chat
            messages): the previous
            turn's results as `tool` messages (or the opening `system` and `user` ones), then the
            model's answer.
        tool_calls (list[AgentToolCallView]):
        turn (int): From 1.
        usage (AgentTurnViewUsage): The LLM call's usage: `model`, `requests`, `prompt_tokens`, `completion_tokens`,
            `total_tokens`, `cached_tokens`, `latency_ms`.
        cost (float | None | Unset): What the call cost (null: its model has no price).
    """

    messages: list[AgentTurnViewMessagesItem]
    tool_calls: list[AgentToolCallView]
    turn: int
    usage: AgentTurnViewUsage
    cost: float | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        messages = []
        for messages_item_data in self.messages:
            messages_item = messages_item_data.to_dict()
            messages.append(messages_item)

        tool_calls = []
        for tool_calls_item_data in self.tool_calls:
            tool_calls_item = tool_calls_item_data.to_dict()
            tool_calls.append(tool_calls_item)

        turn = self.turn

        usage = self.usage.to_dict()

        cost: float | None | Unset
        if isinstance(self.cost, Unset):
            cost = UNSET
        else:
            cost = self.cost

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "messages": messages,
                "tool_calls": tool_calls,
                "turn": turn,
                "usage": usage,
            }
        )
        if cost is not UNSET:
            field_dict["cost"] = cost

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.agent_tool_call_view import AgentToolCallView
        from ..models.agent_turn_view_messages_item import AgentTurnViewMessagesItem
        from ..models.agent_turn_view_usage import AgentTurnViewUsage

        d = dict(src_dict)
        messages = []
        _messages = d.pop("messages")
        for messages_item_data in _messages:
            messages_item = AgentTurnViewMessagesItem.from_dict(messages_item_data)

            messages.append(messages_item)

        tool_calls = []
        _tool_calls = d.pop("tool_calls")
        for tool_calls_item_data in _tool_calls:
            tool_calls_item = AgentToolCallView.from_dict(tool_calls_item_data)

            tool_calls.append(tool_calls_item)

        turn = d.pop("turn")

        usage = AgentTurnViewUsage.from_dict(d.pop("usage"))

        def _parse_cost(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        cost = _parse_cost(d.pop("cost", UNSET))

        agent_turn_view = cls(
            messages=messages,
            tool_calls=tool_calls,
            turn=turn,
            usage=usage,
            cost=cost,
        )

        agent_turn_view.additional_properties = d
        return agent_turn_view

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
