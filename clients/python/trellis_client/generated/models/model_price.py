from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from typing_extensions import Self

from ..types import UNSET, Unset

T = TypeVar("T", bound="ModelPrice")


@_attrs_define
class ModelPrice:
    """One model's prices per million tokens, from `valid_from` on.

    Attributes:
        input_per_mtok (float):
        model (str):
        output_per_mtok (float):
        updated_at (datetime.datetime):
        valid_from (datetime.datetime):
        cached_input_per_mtok (float | None | Unset): Cached input tokens (none: the input price).
    """

    input_per_mtok: float
    model: str
    output_per_mtok: float
    updated_at: datetime.datetime
    valid_from: datetime.datetime
    cached_input_per_mtok: float | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        input_per_mtok = self.input_per_mtok

        model = self.model

        output_per_mtok = self.output_per_mtok

        updated_at = self.updated_at.isoformat()

        valid_from = self.valid_from.isoformat()

        cached_input_per_mtok: float | None | Unset
        if isinstance(self.cached_input_per_mtok, Unset):
            cached_input_per_mtok = UNSET
        else:
            cached_input_per_mtok = self.cached_input_per_mtok

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "input_per_mtok": input_per_mtok,
                "model": model,
                "output_per_mtok": output_per_mtok,
                "updated_at": updated_at,
                "valid_from": valid_from,
            }
        )
        if cached_input_per_mtok is not UNSET:
            field_dict["cached_input_per_mtok"] = cached_input_per_mtok

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        input_per_mtok = d.pop("input_per_mtok")

        model = d.pop("model")

        output_per_mtok = d.pop("output_per_mtok")

        updated_at = datetime.datetime.fromisoformat(d.pop("updated_at"))

        valid_from = datetime.datetime.fromisoformat(d.pop("valid_from"))

        def _parse_cached_input_per_mtok(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        cached_input_per_mtok = _parse_cached_input_per_mtok(
            d.pop("cached_input_per_mtok", UNSET)
        )

        model_price = cls(
            input_per_mtok=input_per_mtok,
            model=model,
            output_per_mtok=output_per_mtok,
            updated_at=updated_at,
            valid_from=valid_from,
            cached_input_per_mtok=cached_input_per_mtok,
        )

        model_price.additional_properties = d
        return model_price

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
