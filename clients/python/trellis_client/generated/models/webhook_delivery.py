from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast
from uuid import UUID

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from typing_extensions import Self

from ..models.delivery_status import DeliveryStatus
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.webhook_delivery_log_item import WebhookDeliveryLogItem


T = TypeVar("T", bound="WebhookDelivery")


@_attrs_define
class WebhookDelivery:
    """One delivery of the log.

    Attributes:
        attempts (int):
        created_at (datetime.datetime):
        delivery_id (UUID):
        kind (str): The event kind.
        log (list[WebhookDeliveryLogItem]): Every try: `{"at", "attempt", "status" (HTTP, or null), "error"}`.
        next_attempt_at (datetime.datetime):
        seq (int):
        status (DeliveryStatus):
        task_id (UUID):
        delivered_at (datetime.datetime | None | Unset):
    """

    attempts: int
    created_at: datetime.datetime
    delivery_id: UUID
    kind: str
    log: list[WebhookDeliveryLogItem]
    next_attempt_at: datetime.datetime
    seq: int
    status: DeliveryStatus
    task_id: UUID
    delivered_at: datetime.datetime | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        attempts = self.attempts

        created_at = self.created_at.isoformat()

        delivery_id = str(self.delivery_id)

        kind = self.kind

        log = []
        for log_item_data in self.log:
            log_item = log_item_data.to_dict()
            log.append(log_item)

        next_attempt_at = self.next_attempt_at.isoformat()

        seq = self.seq

        status = self.status.value

        task_id = str(self.task_id)

        delivered_at: None | str | Unset
        if isinstance(self.delivered_at, Unset):
            delivered_at = UNSET
        elif isinstance(self.delivered_at, datetime.datetime):
            delivered_at = self.delivered_at.isoformat()
        else:
            delivered_at = self.delivered_at

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "attempts": attempts,
                "created_at": created_at,
                "delivery_id": delivery_id,
                "kind": kind,
                "log": log,
                "next_attempt_at": next_attempt_at,
                "seq": seq,
                "status": status,
                "task_id": task_id,
            }
        )
        if delivered_at is not UNSET:
            field_dict["delivered_at"] = delivered_at

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.webhook_delivery_log_item import WebhookDeliveryLogItem

        d = dict(src_dict)
        attempts = d.pop("attempts")

        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))

        delivery_id = UUID(d.pop("delivery_id"))

        kind = d.pop("kind")

        log = []
        _log = d.pop("log")
        for log_item_data in _log:
            log_item = WebhookDeliveryLogItem.from_dict(log_item_data)

            log.append(log_item)

        next_attempt_at = datetime.datetime.fromisoformat(d.pop("next_attempt_at"))

        seq = d.pop("seq")

        status = DeliveryStatus(d.pop("status"))

        task_id = UUID(d.pop("task_id"))

        def _parse_delivered_at(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                delivered_at_type_0 = datetime.datetime.fromisoformat(data)

                return delivered_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        delivered_at = _parse_delivered_at(d.pop("delivered_at", UNSET))

        webhook_delivery = cls(
            attempts=attempts,
            created_at=created_at,
            delivery_id=delivery_id,
            kind=kind,
            log=log,
            next_attempt_at=next_attempt_at,
            seq=seq,
            status=status,
            task_id=task_id,
            delivered_at=delivered_at,
        )

        webhook_delivery.additional_properties = d
        return webhook_delivery

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
