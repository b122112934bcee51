from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from typing_extensions import Self

from ..models.role import Role
from ..types import UNSET, Unset

T = TypeVar("T", bound="KeyInput")


@_attrs_define
class KeyInput:
    """`POST /keys`.

    Attributes:
        name (str):
        role (Role):
        tenant (None | str | Unset): The tenant the key belongs to (default: the caller's, or `?tenant=`'s); its calls
            see
            that tenant's rows only, unless it is an admin's.
    """

    name: str
    role: Role
    tenant: None | str | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        name = self.name

        role = self.role.value

        tenant: None | str | Unset
        if isinstance(self.tenant, Unset):
            tenant = UNSET
        else:
            tenant = self.tenant

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "name": name,
                "role": role,
            }
        )
        if tenant is not UNSET:
            field_dict["tenant"] = tenant

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        name = d.pop("name")

        role = Role(d.pop("role"))

        def _parse_tenant(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        tenant = _parse_tenant(d.pop("tenant", UNSET))

        key_input = cls(
            name=name,
            role=role,
            tenant=tenant,
        )

        return key_input
