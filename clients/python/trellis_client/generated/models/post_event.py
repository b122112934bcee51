from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from typing_extensions import Self

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.post_event_payload_type_0 import PostEventPayloadType0


T = TypeVar("T", bound="PostEvent")


@_attrs_define
class PostEvent:
    """`POST /events`.

    Attributes:
        key (str): The key `wait_event` steps wait for.
        payload (None | PostEventPayloadType0 | Unset): The event's payload: the output of every step it resolves; a
            wait's `match` must be
            contained in it.
    """

    key: str
    payload: None | PostEventPayloadType0 | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        from ..models.post_event_payload_type_0 import PostEventPayloadType0

        key = self.key

        payload: dict[str, Any] | None | Unset
        if isinstance(self.payload, Unset):
            payload = UNSET
        elif isinstance(self.payload, PostEventPayloadType0):
            payload = self.payload.to_dict()
        else:
            payload = self.payload

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "key": key,
            }
        )
        if payload is not UNSET:
            field_dict["payload"] = payload

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.post_event_payload_type_0 import PostEventPayloadType0

        d = dict(src_dict)
        key = d.pop("key")

        def _parse_payload(data: object) -> None | PostEventPayloadType0 | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                payload_type_0 = PostEventPayloadType0.from_dict(data)

                return payload_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | PostEventPayloadType0 | Unset, data)

        payload = _parse_payload(d.pop("payload", UNSET))

        post_event = cls(
            key=key,
            payload=payload,
        )

        return post_event
