from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from typing_extensions import Self

from ..types import UNSET, Unset

T = TypeVar("T", bound="WebhookInput")


@_attrs_define
class WebhookInput:
    """`POST /webhooks`.

    Attributes:
        url (str): Where deliveries are `POST`ed.
        events (list[str] | Unset): Event kinds (empty or absent: the terminal kinds and `intervention_required`).
        secret (None | str | Unset): The Standard Webhooks signing secret (`whsec_` + base64); absent: one is made and
            shown
            in this answer only.
        template (None | str | Unset): Only tasks submitted from this template.
    """

    url: str
    events: list[str] | Unset = UNSET
    secret: None | str | Unset = UNSET
    template: None | str | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        url = self.url

        events: list[str] | Unset = UNSET
        if not isinstance(self.events, Unset):
            events = self.events

        secret: None | str | Unset
        if isinstance(self.secret, Unset):
            secret = UNSET
        else:
            secret = self.secret

        template: None | str | Unset
        if isinstance(self.template, Unset):
            template = UNSET
        else:
            template = self.template

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "url": url,
            }
        )
        if events is not UNSET:
            field_dict["events"] = events
        if secret is not UNSET:
            field_dict["secret"] = secret
        if template is not UNSET:
            field_dict["template"] = template

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        url = d.pop("url")

        events = cast(list[str], d.pop("events", UNSET))

        def _parse_secret(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        secret = _parse_secret(d.pop("secret", UNSET))

        def _parse_template(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        template = _parse_template(d.pop("template", UNSET))

        webhook_input = cls(
            url=url,
            events=events,
            secret=secret,
            template=template,
        )

        return webhook_input
