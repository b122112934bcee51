from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast
from uuid import UUID

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from typing_extensions import Self

from ..models.bulk_action_kind import BulkActionKind
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.bulk_action_filter_type_0 import BulkActionFilterType0
    from ..models.bulk_failure import BulkFailure


T = TypeVar("T", bound="BulkAction")


@_attrs_define
class BulkAction:
    """A bulk action and its progress.

    Attributes:
        action (BulkActionKind): What a bulk action does to each task.
        bulk_action_id (UUID):
        created_at (datetime.datetime):
        done (int): Tasks it was applied to.
        failed (int): Tasks it could not be applied to (one no longer failed, say): see `failures`.
        matched (int): Tasks matched at creation.
        status (str): `running`, `done` or `aborted`.
        tenant (str):
        updated_at (datetime.datetime):
        failures (list[BulkFailure] | None | Unset): `GET /bulk-actions/{id}` only: the first 20 tasks it could not be
            applied to.
        filter_ (BulkActionFilterType0 | None | Unset): The filter as given, with `since` and `until` bound (none: ids
            were given).
        finished_at (datetime.datetime | None | Unset):
        from_step (None | str | Unset):
        name (None | str | Unset):
    """

    action: BulkActionKind
    bulk_action_id: UUID
    created_at: datetime.datetime
    done: int
    failed: int
    matched: int
    status: str
    tenant: str
    updated_at: datetime.datetime
    failures: list[BulkFailure] | None | Unset = UNSET
    filter_: BulkActionFilterType0 | None | Unset = UNSET
    finished_at: datetime.datetime | None | Unset = UNSET
    from_step: None | str | Unset = UNSET
    name: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.bulk_action_filter_type_0 import BulkActionFilterType0

        action = self.action.value

        bulk_action_id = str(self.bulk_action_id)

        created_at = self.created_at.isoformat()

        done = self.done

        failed = self.failed

        matched = self.matched

        status = self.status

        tenant = self.tenant

        updated_at = self.updated_at.isoformat()

        failures: list[dict[str, Any]] | None | Unset
        if isinstance(self.failures, Unset):
            failures = UNSET
        elif isinstance(self.failures, list):
            failures = []
            for failures_type_0_item_data in self.failures:
                failures_type_0_item = failures_type_0_item_data.to_dict()
                failures.append(failures_type_0_item)

        else:
            failures = self.failures

        filter_: dict[str, Any] | None | Unset
        if isinstance(self.filter_, Unset):
            filter_ = UNSET
        elif isinstance(self.filter_, BulkActionFilterType0):
            filter_ = self.filter_.to_dict()
        else:
            filter_ = self.filter_

        finished_at: None | str | Unset
        if isinstance(self.finished_at, Unset):
            finished_at = UNSET
        elif isinstance(self.finished_at, datetime.datetime):
            finished_at = self.finished_at.isoformat()
        else:
            finished_at = self.finished_at

        from_step: None | str | Unset
        if isinstance(self.from_step, Unset):
            from_step = UNSET
        else:
            from_step = self.from_step

        name: None | str | Unset
        if isinstance(self.name, Unset):
            name = UNSET
        else:
            name = self.name

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "action": action,
                "bulk_action_id": bulk_action_id,
                "created_at": created_at,
                "done": done,
                "failed": failed,
                "matched": matched,
                "status": status,
                "tenant": tenant,
                "updated_at": updated_at,
            }
        )
        if failures is not UNSET:
            field_dict["failures"] = failures
        if filter_ is not UNSET:
            field_dict["filter"] = filter_
        if finished_at is not UNSET:
            field_dict["finished_at"] = finished_at
        if from_step is not UNSET:
            field_dict["from_step"] = from_step
        if name is not UNSET:
            field_dict["name"] = name

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.bulk_action_filter_type_0 import BulkActionFilterType0
        from ..models.bulk_failure import BulkFailure

        d = dict(src_dict)
        action = BulkActionKind(d.pop("action"))

        bulk_action_id = UUID(d.pop("bulk_action_id"))

        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))

        done = d.pop("done")

        failed = d.pop("failed")

        matched = d.pop("matched")

        status = d.pop("status")

        tenant = d.pop("tenant")

        updated_at = datetime.datetime.fromisoformat(d.pop("updated_at"))

        def _parse_failures(data: object) -> list[BulkFailure] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                failures_type_0 = []
                _failures_type_0 = data
                for failures_type_0_item_data in _failures_type_0:
                    failures_type_0_item = BulkFailure.from_dict(
                        failures_type_0_item_data
                    )

                    failures_type_0.append(failures_type_0_item)

                return failures_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[BulkFailure] | None | Unset, data)

        failures = _parse_failures(d.pop("failures", UNSET))

        def _parse_filter_(data: object) -> BulkActionFilterType0 | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                filter_type_0 = BulkActionFilterType0.from_dict(data)

                return filter_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(BulkActionFilterType0 | None | Unset, data)

        filter_ = _parse_filter_(d.pop("filter", UNSET))

        def _parse_finished_at(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                finished_at_type_0 = datetime.datetime.fromisoformat(data)

                return finished_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        finished_at = _parse_finished_at(d.pop("finished_at", UNSET))

        def _parse_from_step(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        from_step = _parse_from_step(d.pop("from_step", UNSET))

        def _parse_name(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        name = _parse_name(d.pop("name", UNSET))

        bulk_action = cls(
            action=action,
            bulk_action_id=bulk_action_id,
            created_at=created_at,
            done=done,
            failed=failed,
            matched=matched,
            status=status,
            tenant=tenant,
            updated_at=updated_at,
            failures=failures,
            filter_=filter_,
            finished_at=finished_at,
            from_step=from_step,
            name=name,
        )

        bulk_action.additional_properties = d
        return bulk_action

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
