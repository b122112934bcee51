from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from typing_extensions import Self

from ..models.role import Role

T = TypeVar("T", bound="WhoAmI")


@_attrs_define
class WhoAmI:
    """`GET /whoami`: what the presented key may do (the dashboard shows only those actions).

    Attributes:
        access_control (bool): Whether keys are checked at all (`[auth]`).
        role (Role):
        tenant (str): The key's tenant (with an admin's `?tenant=`, that one).
    """

    access_control: bool
    role: Role
    tenant: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        access_control = self.access_control

        role = self.role.value

        tenant = self.tenant

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "access_control": access_control,
                "role": role,
                "tenant": tenant,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        access_control = d.pop("access_control")

        role = Role(d.pop("role"))

        tenant = d.pop("tenant")

        who_am_i = cls(
            access_control=access_control,
            role=role,
            tenant=tenant,
        )

        who_am_i.additional_properties = d
        return who_am_i

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
