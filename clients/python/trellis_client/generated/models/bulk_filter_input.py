from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from typing_extensions import Self

from ..models.task_status import TaskStatus
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.bulk_filter_input_metadata_type_0 import BulkFilterInputMetadataType0


T = TypeVar("T", bound="BulkFilterInput")


@_attrs_define
class BulkFilterInput:
    """The task list's filters. Without `since` or `until`, the last 7 days.

    Attributes:
        metadata (BulkFilterInputMetadataType0 | None | Unset): The task's metadata contains these keys with these
            values.
        q (None | str | Unset): The description contains this text, in any case.
        since (None | str | Unset): Created at or after: an RFC 3339 time, or a span before now (`2h`, `30m`, `7d`),
            bound
            once when the action is created. Example: 2h.
        status (None | TaskStatus | Unset):
        template (None | str | Unset): Submitted from this template.
        until (None | str | Unset): Created before: as `since`.
    """

    metadata: BulkFilterInputMetadataType0 | None | Unset = UNSET
    q: None | str | Unset = UNSET
    since: None | str | Unset = UNSET
    status: None | TaskStatus | Unset = UNSET
    template: None | str | Unset = UNSET
    until: None | str | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        from ..models.bulk_filter_input_metadata_type_0 import (
            BulkFilterInputMetadataType0,
        )

        metadata: dict[str, Any] | None | Unset
        if isinstance(self.metadata, Unset):
            metadata = UNSET
        elif isinstance(self.metadata, BulkFilterInputMetadataType0):
            metadata = self.metadata.to_dict()
        else:
            metadata = self.metadata

        q: None | str | Unset
        if isinstance(self.q, Unset):
            q = UNSET
        else:
            q = self.q

        since: None | str | Unset
        if isinstance(self.since, Unset):
            since = UNSET
        else:
            since = self.since

        status: None | str | Unset
        if isinstance(self.status, Unset):
            status = UNSET
        elif isinstance(self.status, TaskStatus):
            status = self.status.value
        else:
            status = self.status

        template: None | str | Unset
        if isinstance(self.template, Unset):
            template = UNSET
        else:
            template = self.template

        until: None | str | Unset
        if isinstance(self.until, Unset):
            until = UNSET
        else:
            until = self.until

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if metadata is not UNSET:
            field_dict["metadata"] = metadata
        if q is not UNSET:
            field_dict["q"] = q
        if since is not UNSET:
            field_dict["since"] = since
        if status is not UNSET:
            field_dict["status"] = status
        if template is not UNSET:
            field_dict["template"] = template
        if until is not UNSET:
            field_dict["until"] = until

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.bulk_filter_input_metadata_type_0 import (
            BulkFilterInputMetadataType0,
        )

        d = dict(src_dict)

        def _parse_metadata(
            data: object,
        ) -> BulkFilterInputMetadataType0 | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                metadata_type_0 = BulkFilterInputMetadataType0.from_dict(data)

                return metadata_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(BulkFilterInputMetadataType0 | None | Unset, data)

        metadata = _parse_metadata(d.pop("metadata", UNSET))

        def _parse_q(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        q = _parse_q(d.pop("q", UNSET))

        def _parse_since(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        since = _parse_since(d.pop("since", UNSET))

        def _parse_status(data: object) -> None | TaskStatus | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                status_type_0 = TaskStatus(data)

                return status_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | TaskStatus | Unset, data)

        status = _parse_status(d.pop("status", UNSET))

        def _parse_template(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        template = _parse_template(d.pop("template", UNSET))

        def _parse_until(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        until = _parse_until(d.pop("until", UNSET))

        bulk_filter_input = cls(
            metadata=metadata,
            q=q,
            since=since,
            status=status,
            template=template,
            until=until,
        )

        return bulk_filter_input
