from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from typing_extensions import Self

T = TypeVar("T", bound="StepCountsView")


@_attrs_define
class StepCountsView:
    """Steps of the current plan version by status (`total` leaves superseded ones out).

    Attributes:
        blocked (int):
        failed (int):
        ready (int):
        running (int):
        skipped (int):
        succeeded (int):
        superseded (int):
        total (int):
        waiting (int): Waiting for an approval, an event, a callback or a time (holding no worker).
    """

    blocked: int
    failed: int
    ready: int
    running: int
    skipped: int
    succeeded: int
    superseded: int
    total: int
    waiting: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        blocked = self.blocked

        failed = self.failed

        ready = self.ready

        running = self.running

        skipped = self.skipped

        succeeded = self.succeeded

        superseded = self.superseded

        total = self.total

        waiting = self.waiting

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "blocked": blocked,
                "failed": failed,
                "ready": ready,
                "running": running,
                "skipped": skipped,
                "succeeded": succeeded,
                "superseded": superseded,
                "total": total,
                "waiting": waiting,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        blocked = d.pop("blocked")

        failed = d.pop("failed")

        ready = d.pop("ready")

        running = d.pop("running")

        skipped = d.pop("skipped")

        succeeded = d.pop("succeeded")

        superseded = d.pop("superseded")

        total = d.pop("total")

        waiting = d.pop("waiting")

        step_counts_view = cls(
            blocked=blocked,
            failed=failed,
            ready=ready,
            running=running,
            skipped=skipped,
            succeeded=succeeded,
            superseded=superseded,
            total=total,
            waiting=waiting,
        )

        step_counts_view.additional_properties = d
        return step_counts_view

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
