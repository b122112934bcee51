from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, TypeVar
from uuid import UUID

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from typing_extensions import Self

T = TypeVar("T", bound="Worker")


@_attrs_define
class Worker:
    """A live worker of the fleet (`GET /workers`).

    Attributes:
        concurrency (int):
        host (str):
        in_flight (int): Steps and decisions held at the last heartbeat.
        last_heartbeat_at (datetime.datetime):
        pid (int):
        started_at (datetime.datetime):
        worker_id (UUID):
    """

    concurrency: int
    host: str
    in_flight: int
    last_heartbeat_at: datetime.datetime
    pid: int
    started_at: datetime.datetime
    worker_id: UUID
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        concurrency = self.concurrency

        host = self.host

        in_flight = self.in_flight

        last_heartbeat_at = self.last_heartbeat_at.isoformat()

        pid = self.pid

        started_at = self.started_at.isoformat()

        worker_id = str(self.worker_id)

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "concurrency": concurrency,
                "host": host,
                "in_flight": in_flight,
                "last_heartbeat_at": last_heartbeat_at,
                "pid": pid,
                "started_at": started_at,
                "worker_id": worker_id,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        concurrency = d.pop("concurrency")

        host = d.pop("host")

        in_flight = d.pop("in_flight")

        last_heartbeat_at = datetime.datetime.fromisoformat(d.pop("last_heartbeat_at"))

        pid = d.pop("pid")

        started_at = datetime.datetime.fromisoformat(d.pop("started_at"))

        worker_id = UUID(d.pop("worker_id"))

        worker = cls(
            concurrency=concurrency,
            host=host,
            in_flight=in_flight,
            last_heartbeat_at=last_heartbeat_at,
            pid=pid,
            started_at=started_at,
            worker_id=worker_id,
        )

        worker.additional_properties = d
        return worker

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
