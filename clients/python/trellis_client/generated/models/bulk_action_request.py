from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast
from uuid import UUID

from attrs import define as _attrs_define
from typing_extensions import Self

from ..models.bulk_action_kind import BulkActionKind
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.bulk_filter_input import BulkFilterInput


T = TypeVar("T", bound="BulkActionRequest")


@_attrs_define
class BulkActionRequest:
    """`POST /bulk-actions`: a filter or ids, not both.

    Attributes:
        action (BulkActionKind): What a bulk action does to each task.
        dry_run (bool | Unset): Count the matching tasks; change nothing.
        filter_ (BulkFilterInput | None | Unset):
        from_step (None | str | Unset): A rerun's first step: `first_failed` (the default: the first failed step in plan
            order,
            or the first that did not succeed) or a step id. Example: first_failed.
        ids (list[UUID] | None | Unset): These tasks (at most 10,000).
        name (None | str | Unset):
    """

    action: BulkActionKind
    dry_run: bool | Unset = UNSET
    filter_: BulkFilterInput | None | Unset = UNSET
    from_step: None | str | Unset = UNSET
    ids: list[UUID] | None | Unset = UNSET
    name: None | str | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        from ..models.bulk_filter_input import BulkFilterInput

        action = self.action.value

        dry_run = self.dry_run

        filter_: dict[str, Any] | None | Unset
        if isinstance(self.filter_, Unset):
            filter_ = UNSET
        elif isinstance(self.filter_, BulkFilterInput):
            filter_ = self.filter_.to_dict()
        else:
            filter_ = self.filter_

        from_step: None | str | Unset
        if isinstance(self.from_step, Unset):
            from_step = UNSET
        else:
            from_step = self.from_step

        ids: list[str] | None | Unset
        if isinstance(self.ids, Unset):
            ids = UNSET
        elif isinstance(self.ids, list):
            ids = []
            for ids_type_0_item_data in self.ids:
                ids_type_0_item = str(ids_type_0_item_data)
                ids.append(ids_type_0_item)

        else:
            ids = self.ids

        name: None | str | Unset
        if isinstance(self.name, Unset):
            name = UNSET
        else:
            name = self.name

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "action": action,
            }
        )
        if dry_run is not UNSET:
            field_dict["dry_run"] = dry_run
        if filter_ is not UNSET:
            field_dict["filter"] = filter_
        if from_step is not UNSET:
            field_dict["from_step"] = from_step
        if ids is not UNSET:
            field_dict["ids"] = ids
        if name is not UNSET:
            field_dict["name"] = name

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.bulk_filter_input import BulkFilterInput

        d = dict(src_dict)
        action = BulkActionKind(d.pop("action"))

        dry_run = d.pop("dry_run", UNSET)

        def _parse_filter_(data: object) -> BulkFilterInput | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                filter_type_0 = BulkFilterInput.from_dict(data)

                return filter_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(BulkFilterInput | None | Unset, data)

        filter_ = _parse_filter_(d.pop("filter", UNSET))

        def _parse_from_step(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        from_step = _parse_from_step(d.pop("from_step", UNSET))

        def _parse_ids(data: object) -> list[UUID] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                ids_type_0 = []
                _ids_type_0 = data
                for ids_type_0_item_data in _ids_type_0:
                    ids_type_0_item = UUID(ids_type_0_item_data)

                    ids_type_0.append(ids_type_0_item)

                return ids_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[UUID] | None | Unset, data)

        ids = _parse_ids(d.pop("ids", UNSET))

        def _parse_name(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        name = _parse_name(d.pop("name", UNSET))

        bulk_action_request = cls(
            action=action,
            dry_run=dry_run,
            filter_=filter_,
            from_step=from_step,
            ids=ids,
            name=name,
        )

        return bulk_action_request
