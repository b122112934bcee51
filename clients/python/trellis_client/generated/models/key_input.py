from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from typing_extensions import Self

from ..models.role import Role

T = TypeVar("T", bound="KeyInput")


@_attrs_define
class KeyInput:
    """`POST /keys`.

    Attributes:
        name (str):
        role (Role):
    """

    name: str
    role: Role

    def to_dict(self) -> dict[str, Any]:
        name = self.name

        role = self.role.value

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "name": name,
                "role": role,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        name = d.pop("name")

        role = Role(d.pop("role"))

        key_input = cls(
            name=name,
            role=role,
        )

        return key_input
