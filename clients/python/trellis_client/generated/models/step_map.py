from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from typing_extensions import Self

from ..models.item_failure import ItemFailure
from ..types import UNSET, Unset

T = TypeVar("T", bound="StepMap")


@_attrs_define
class StepMap:
    """A step's `map`: the list it runs over and how.

    Attributes:
        over (str): One placeholder that resolves to an array: `${a.output.items}`, `${context.docs}` or
            `${metadata.ids}`.
        as_ (str | Unset): The name the step's parameters read each item by (`${item}`, `${item.field}`).
        max_items (int | None | Unset): More items than this fail the step (none is started). Required when `over` reads
            a
            step's output; otherwise `[limits] max_steps_per_plan`.
        max_parallel (int | None | Unset): At most this many items run at once (default: all, within the task's
            `max_concurrent_steps`).
        on_item_failure (ItemFailure | Unset): What an item that fails for good does to its map.
    """

    over: str
    as_: str | Unset = UNSET
    max_items: int | None | Unset = UNSET
    max_parallel: int | None | Unset = UNSET
    on_item_failure: ItemFailure | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        over = self.over

        as_ = self.as_

        max_items: int | None | Unset
        if isinstance(self.max_items, Unset):
            max_items = UNSET
        else:
            max_items = self.max_items

        max_parallel: int | None | Unset
        if isinstance(self.max_parallel, Unset):
            max_parallel = UNSET
        else:
            max_parallel = self.max_parallel

        on_item_failure: str | Unset = UNSET
        if not isinstance(self.on_item_failure, Unset):
            on_item_failure = self.on_item_failure.value

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "over": over,
            }
        )
        if as_ is not UNSET:
            field_dict["as"] = as_
        if max_items is not UNSET:
            field_dict["max_items"] = max_items
        if max_parallel is not UNSET:
            field_dict["max_parallel"] = max_parallel
        if on_item_failure is not UNSET:
            field_dict["on_item_failure"] = on_item_failure

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        over = d.pop("over")

        as_ = d.pop("as", UNSET)

        def _parse_max_items(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        max_items = _parse_max_items(d.pop("max_items", UNSET))

        def _parse_max_parallel(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        max_parallel = _parse_max_parallel(d.pop("max_parallel", UNSET))

        _on_item_failure = d.pop("on_item_failure", UNSET)
        on_item_failure: ItemFailure | Unset
        if isinstance(_on_item_failure, Unset):
            on_item_failure = UNSET
        else:
            on_item_failure = ItemFailure(_on_item_failure)

        step_map = cls(
            over=over,
            as_=as_,
            max_items=max_items,
            max_parallel=max_parallel,
            on_item_failure=on_item_failure,
        )

        return step_map
