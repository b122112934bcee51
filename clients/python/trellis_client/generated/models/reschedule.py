from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from typing_extensions import Self

T = TypeVar("T", bound="Reschedule")


@_attrs_define
class Reschedule:
    """`POST /tasks/{id}/reschedule`.

    Attributes:
        run_at (datetime.datetime): Nothing of the task runs before this RFC 3339 time.
    """

    run_at: datetime.datetime

    def to_dict(self) -> dict[str, Any]:
        run_at = self.run_at.isoformat()

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "run_at": run_at,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        run_at = datetime.datetime.fromisoformat(d.pop("run_at"))

        reschedule = cls(
            run_at=run_at,
        )

        return reschedule
