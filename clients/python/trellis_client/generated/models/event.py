from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from typing_extensions import Self

if TYPE_CHECKING:
    from ..models.event_payload import EventPayload


T = TypeVar("T", bound="Event")


@_attrs_define
class Event:
    """An event (`GET /tasks/{id}/events`, and the data of a Server-Sent Event).

    Attributes:
        at (datetime.datetime):
        kind (str):
        payload (EventPayload): Credential-like values are redacted.
        seq (int):
    """

    at: datetime.datetime
    kind: str
    payload: EventPayload
    seq: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        at = self.at.isoformat()

        kind = self.kind

        payload = self.payload.to_dict()

        seq = self.seq

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "at": at,
                "kind": kind,
                "payload": payload,
                "seq": seq,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.event_payload import EventPayload

        d = dict(src_dict)
        at = datetime.datetime.fromisoformat(d.pop("at"))

        kind = d.pop("kind")

        payload = EventPayload.from_dict(d.pop("payload"))

        seq = d.pop("seq")

        event = cls(
            at=at,
            kind=kind,
            payload=payload,
            seq=seq,
        )

        event.additional_properties = d
        return event

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
