from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, TypeVar, cast
from uuid import UUID

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from typing_extensions import Self

from ..models.role import Role
from ..types import UNSET, Unset

T = TypeVar("T", bound="Key")


@_attrs_define
class Key:
    """An API key (`/keys`): never the key itself, except in the answer to `POST /keys`.

    Attributes:
        created_at (datetime.datetime):
        id (UUID):
        key_prefix (str): The key's first characters, to tell keys apart.
        name (str):
        role (Role):
        tenant (str): The tenant whose rows the key's calls see (an admin's: every tenant's).
        key (None | str | Unset): The key: only in the answer to `POST /keys`.
        revoked_at (datetime.datetime | None | Unset):
    """

    created_at: datetime.datetime
    id: UUID
    key_prefix: str
    name: str
    role: Role
    tenant: str
    key: None | str | Unset = UNSET
    revoked_at: datetime.datetime | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        created_at = self.created_at.isoformat()

        id = str(self.id)

        key_prefix = self.key_prefix

        name = self.name

        role = self.role.value

        tenant = self.tenant

        key: None | str | Unset
        if isinstance(self.key, Unset):
            key = UNSET
        else:
            key = self.key

        revoked_at: None | str | Unset
        if isinstance(self.revoked_at, Unset):
            revoked_at = UNSET
        elif isinstance(self.revoked_at, datetime.datetime):
            revoked_at = self.revoked_at.isoformat()
        else:
            revoked_at = self.revoked_at

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "created_at": created_at,
                "id": id,
                "key_prefix": key_prefix,
                "name": name,
                "role": role,
                "tenant": tenant,
            }
        )
        if key is not UNSET:
            field_dict["key"] = key
        if revoked_at is not UNSET:
            field_dict["revoked_at"] = revoked_at

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))

        id = UUID(d.pop("id"))

        key_prefix = d.pop("key_prefix")

        name = d.pop("name")

        role = Role(d.pop("role"))

        tenant = d.pop("tenant")

        def _parse_key(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        key = _parse_key(d.pop("key", UNSET))

        def _parse_revoked_at(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                revoked_at_type_0 = datetime.datetime.fromisoformat(data)

                return revoked_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        revoked_at = _parse_revoked_at(d.pop("revoked_at", UNSET))

        key = cls(
            created_at=created_at,
            id=id,
            key_prefix=key_prefix,
            name=name,
            role=role,
            tenant=tenant,
            key=key,
            revoked_at=revoked_at,
        )

        key.additional_properties = d
        return key

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
