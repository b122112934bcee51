from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from typing_extensions import Self

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.reflection_body import ReflectionBody


T = TypeVar("T", bound="Reflection")


@_attrs_define
class Reflection:
    """`GET /tasks/{id}/reflections`.

    Attributes:
        body (ReflectionBody): The decision: tier, strategy, reasoning and its parameters.
        created_at (datetime.datetime):
        is_fallback (bool): Whether the rules brain decided because the LLM could not.
        level (str): `step` or `overall`.
        plan_version (int):
        round_ (int):
        raw (None | str | Unset):
        step_key (None | str | Unset):
    """

    body: ReflectionBody
    created_at: datetime.datetime
    is_fallback: bool
    level: str
    plan_version: int
    round_: int
    raw: None | str | Unset = UNSET
    step_key: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        body = self.body.to_dict()

        created_at = self.created_at.isoformat()

        is_fallback = self.is_fallback

        level = self.level

        plan_version = self.plan_version

        round_ = self.round_

        raw: None | str | Unset
        if isinstance(self.raw, Unset):
            raw = UNSET
        else:
            raw = self.raw

        step_key: None | str | Unset
        if isinstance(self.step_key, Unset):
            step_key = UNSET
        else:
            step_key = self.step_key

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "body": body,
                "created_at": created_at,
                "is_fallback": is_fallback,
                "level": level,
                "plan_version": plan_version,
                "round": round_,
            }
        )
        if raw is not UNSET:
            field_dict["raw"] = raw
        if step_key is not UNSET:
            field_dict["step_key"] = step_key

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.reflection_body import ReflectionBody

        d = dict(src_dict)
        body = ReflectionBody.from_dict(d.pop("body"))

        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))

        is_fallback = d.pop("is_fallback")

        level = d.pop("level")

        plan_version = d.pop("plan_version")

        round_ = d.pop("round")

        def _parse_raw(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        raw = _parse_raw(d.pop("raw", UNSET))

        def _parse_step_key(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        step_key = _parse_step_key(d.pop("step_key", UNSET))

        reflection = cls(
            body=body,
            created_at=created_at,
            is_fallback=is_fallback,
            level=level,
            plan_version=plan_version,
            round_=round_,
            raw=raw,
            step_key=step_key,
        )

        reflection.additional_properties = d
        return reflection

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
