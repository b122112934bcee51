from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from typing_extensions import Self

T = TypeVar("T", bound="LlmUsageView")


@_attrs_define
class LlmUsageView:
    """A task's LLM usage.

    Attributes:
        calls (int):
        completion_tokens (int):
        failed_calls (int):
        prompt_tokens (int):
        requests (int):
        total_tokens (int):
    """

    calls: int
    completion_tokens: int
    failed_calls: int
    prompt_tokens: int
    requests: int
    total_tokens: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        calls = self.calls

        completion_tokens = self.completion_tokens

        failed_calls = self.failed_calls

        prompt_tokens = self.prompt_tokens

        requests = self.requests

        total_tokens = self.total_tokens

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "calls": calls,
                "completion_tokens": completion_tokens,
                "failed_calls": failed_calls,
                "prompt_tokens": prompt_tokens,
                "requests": requests,
                "total_tokens": total_tokens,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        calls = d.pop("calls")

        completion_tokens = d.pop("completion_tokens")

        failed_calls = d.pop("failed_calls")

        prompt_tokens = d.pop("prompt_tokens")

        requests = d.pop("requests")

        total_tokens = d.pop("total_tokens")

        llm_usage_view = cls(
            calls=calls,
            completion_tokens=completion_tokens,
            failed_calls=failed_calls,
            prompt_tokens=prompt_tokens,
            requests=requests,
            total_tokens=total_tokens,
        )

        llm_usage_view.additional_properties = d
        return llm_usage_view

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
