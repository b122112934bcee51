from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from typing_extensions import Self

from ..types import UNSET, Unset

T = TypeVar("T", bound="FailureRule")


@_attrs_define
class FailureRule:
    """One rule of a tool's `failure_when`: a 2xx answer whose body matches it is a failed call.

    Attributes:
        pointer (str): JSON pointer into the answer's body (`/status`, `/result/ok`; empty: the whole body).
        category (None | str | Unset): The failure's category (default `tool_error`).
        equals (Any | Unset): The rule matches when the value there equals this.
        message_pointer (None | str | Unset): JSON pointer to the failure's message (default: the value the rule
            matched).
        present (bool | None | Unset): `true` (the default without `equals`): the rule matches when a value other than
            null is
            there; `false`: when nothing is.
        retry_after_pointer (None | str | Unset): JSON pointer to a retry time in seconds (a number, or a string holding
            one): the tool is
            held until then, as by `Retry-After`.
        retryable (bool | None | Unset): Whether the call may be retried (default: true for `tool_error` or when a retry
            time is
            given, else false).
    """

    pointer: str
    category: None | str | Unset = UNSET
    equals: Any | Unset = UNSET
    message_pointer: None | str | Unset = UNSET
    present: bool | None | Unset = UNSET
    retry_after_pointer: None | str | Unset = UNSET
    retryable: bool | None | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        pointer = self.pointer

        category: None | str | Unset
        if isinstance(self.category, Unset):
            category = UNSET
        else:
            category = self.category

        equals = self.equals

        message_pointer: None | str | Unset
        if isinstance(self.message_pointer, Unset):
            message_pointer = UNSET
        else:
            message_pointer = self.message_pointer

        present: bool | None | Unset
        if isinstance(self.present, Unset):
            present = UNSET
        else:
            present = self.present

        retry_after_pointer: None | str | Unset
        if isinstance(self.retry_after_pointer, Unset):
            retry_after_pointer = UNSET
        else:
            retry_after_pointer = self.retry_after_pointer

        retryable: bool | None | Unset
        if isinstance(self.retryable, Unset):
            retryable = UNSET
        else:
            retryable = self.retryable

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "pointer": pointer,
            }
        )
        if category is not UNSET:
            field_dict["category"] = category
        if equals is not UNSET:
            field_dict["equals"] = equals
        if message_pointer is not UNSET:
            field_dict["message_pointer"] = message_pointer
        if present is not UNSET:
            field_dict["present"] = present
        if retry_after_pointer is not UNSET:
            field_dict["retry_after_pointer"] = retry_after_pointer
        if retryable is not UNSET:
            field_dict["retryable"] = retryable

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        pointer = d.pop("pointer")

        def _parse_category(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        category = _parse_category(d.pop("category", UNSET))

        equals = d.pop("equals", UNSET)

        def _parse_message_pointer(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        message_pointer = _parse_message_pointer(d.pop("message_pointer", UNSET))

        def _parse_present(data: object) -> bool | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(bool | None | Unset, data)

        present = _parse_present(d.pop("present", UNSET))

        def _parse_retry_after_pointer(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        retry_after_pointer = _parse_retry_after_pointer(
            d.pop("retry_after_pointer", UNSET)
        )

        def _parse_retryable(data: object) -> bool | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(bool | None | Unset, data)

        retryable = _parse_retryable(d.pop("retryable", UNSET))

        failure_rule = cls(
            pointer=pointer,
            category=category,
            equals=equals,
            message_pointer=message_pointer,
            present=present,
            retry_after_pointer=retry_after_pointer,
            retryable=retryable,
        )

        return failure_rule
