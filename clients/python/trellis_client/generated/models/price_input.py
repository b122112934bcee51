from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from typing_extensions import Self

from ..types import UNSET, Unset

T = TypeVar("T", bound="PriceInput")


@_attrs_define
class PriceInput:
    """`PUT /model-prices`.

    Attributes:
        input_per_mtok (float):
        model (str): The model name as the LLM calls record it (`llm_calls.model`).
        output_per_mtok (float):
        cached_input_per_mtok (float | None | Unset):
        valid_from (datetime.datetime | None | Unset): From when the price holds (absent: now, by the database's clock).
            Calls recorded before
            keep the cost they were given.
    """

    input_per_mtok: float
    model: str
    output_per_mtok: float
    cached_input_per_mtok: float | None | Unset = UNSET
    valid_from: datetime.datetime | None | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        input_per_mtok = self.input_per_mtok

        model = self.model

        output_per_mtok = self.output_per_mtok

        cached_input_per_mtok: float | None | Unset
        if isinstance(self.cached_input_per_mtok, Unset):
            cached_input_per_mtok = UNSET
        else:
            cached_input_per_mtok = self.cached_input_per_mtok

        valid_from: None | str | Unset
        if isinstance(self.valid_from, Unset):
            valid_from = UNSET
        elif isinstance(self.valid_from, datetime.datetime):
            valid_from = self.valid_from.isoformat()
        else:
            valid_from = self.valid_from

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "input_per_mtok": input_per_mtok,
                "model": model,
                "output_per_mtok": output_per_mtok,
            }
        )
        if cached_input_per_mtok is not UNSET:
            field_dict["cached_input_per_mtok"] = cached_input_per_mtok
        if valid_from is not UNSET:
            field_dict["valid_from"] = valid_from

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        input_per_mtok = d.pop("input_per_mtok")

        model = d.pop("model")

        output_per_mtok = d.pop("output_per_mtok")

        def _parse_cached_input_per_mtok(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        cached_input_per_mtok = _parse_cached_input_per_mtok(
            d.pop("cached_input_per_mtok", UNSET)
        )

        def _parse_valid_from(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                valid_from_type_0 = datetime.datetime.fromisoformat(data)

                return valid_from_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        valid_from = _parse_valid_from(d.pop("valid_from", UNSET))

        price_input = cls(
            input_per_mtok=input_per_mtok,
            model=model,
            output_per_mtok=output_per_mtok,
            cached_input_per_mtok=cached_input_per_mtok,
            valid_from=valid_from,
        )

        return price_input
