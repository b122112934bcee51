from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, TypeVar, cast
from uuid import UUID

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from typing_extensions import Self

from ..types import UNSET, Unset

T = TypeVar("T", bound="BulkAccepted")


@_attrs_define
class BulkAccepted:
    """The action created, or what a dry run matched (no id).

    Attributes:
        dry_run (bool):
        matched (int): The tasks it matched (it applies to these, and only these).
        bulk_action_id (None | Unset | UUID): None for a dry run.
        since (datetime.datetime | None | Unset): The filter's bounds as bound at creation.
        until (datetime.datetime | None | Unset):
    """

    dry_run: bool
    matched: int
    bulk_action_id: None | Unset | UUID = UNSET
    since: datetime.datetime | None | Unset = UNSET
    until: datetime.datetime | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        dry_run = self.dry_run

        matched = self.matched

        bulk_action_id: None | str | Unset
        if isinstance(self.bulk_action_id, Unset):
            bulk_action_id = UNSET
        elif isinstance(self.bulk_action_id, UUID):
            bulk_action_id = str(self.bulk_action_id)
        else:
            bulk_action_id = self.bulk_action_id

        since: None | str | Unset
        if isinstance(self.since, Unset):
            since = UNSET
        elif isinstance(self.since, datetime.datetime):
            since = self.since.isoformat()
        else:
            since = self.since

        until: None | str | Unset
        if isinstance(self.until, Unset):
            until = UNSET
        elif isinstance(self.until, datetime.datetime):
            until = self.until.isoformat()
        else:
            until = self.until

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "dry_run": dry_run,
                "matched": matched,
            }
        )
        if bulk_action_id is not UNSET:
            field_dict["bulk_action_id"] = bulk_action_id
        if since is not UNSET:
            field_dict["since"] = since
        if until is not UNSET:
            field_dict["until"] = until

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        dry_run = d.pop("dry_run")

        matched = d.pop("matched")

        def _parse_bulk_action_id(data: object) -> None | Unset | UUID:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                bulk_action_id_type_0 = UUID(data)

                return bulk_action_id_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | Unset | UUID, data)

        bulk_action_id = _parse_bulk_action_id(d.pop("bulk_action_id", UNSET))

        def _parse_since(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                since_type_0 = datetime.datetime.fromisoformat(data)

                return since_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        since = _parse_since(d.pop("since", UNSET))

        def _parse_until(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                until_type_0 = datetime.datetime.fromisoformat(data)

                return until_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        until = _parse_until(d.pop("until", UNSET))

        bulk_accepted = cls(
            dry_run=dry_run,
            matched=matched,
            bulk_action_id=bulk_action_id,
            since=since,
            until=until,
        )

        bulk_accepted.additional_properties = d
        return bulk_accepted

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
