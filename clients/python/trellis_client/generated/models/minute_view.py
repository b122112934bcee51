from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from typing_extensions import Self

T = TypeVar("T", bound="MinuteView")


@_attrs_define
class MinuteView:
    """One minute of [`ActivityView`].

    Attributes:
        failed (int):
        minute (datetime.datetime):
        succeeded (int):
    """

    failed: int
    minute: datetime.datetime
    succeeded: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        failed = self.failed

        minute = self.minute.isoformat()

        succeeded = self.succeeded

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "failed": failed,
                "minute": minute,
                "succeeded": succeeded,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        failed = d.pop("failed")

        minute = datetime.datetime.fromisoformat(d.pop("minute"))

        succeeded = d.pop("succeeded")

        minute_view = cls(
            failed=failed,
            minute=minute,
            succeeded=succeeded,
        )

        minute_view.additional_properties = d
        return minute_view

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
