from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from typing_extensions import Self

if TYPE_CHECKING:
    from ..models.template_input_schema import TemplateInputSchema
    from ..models.template_plan import TemplatePlan


T = TypeVar("T", bound="Template")


@_attrs_define
class Template:
    """A `templates` row.

    Attributes:
        created_at (datetime.datetime):
        description (str):
        id (str):
        input_schema (TemplateInputSchema):
        plan (TemplatePlan):
    """

    created_at: datetime.datetime
    description: str
    id: str
    input_schema: TemplateInputSchema
    plan: TemplatePlan
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        created_at = self.created_at.isoformat()

        description = self.description

        id = self.id

        input_schema = self.input_schema.to_dict()

        plan = self.plan.to_dict()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "created_at": created_at,
                "description": description,
                "id": id,
                "input_schema": input_schema,
                "plan": plan,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.template_input_schema import TemplateInputSchema
        from ..models.template_plan import TemplatePlan

        d = dict(src_dict)
        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))

        description = d.pop("description")

        id = d.pop("id")

        input_schema = TemplateInputSchema.from_dict(d.pop("input_schema"))

        plan = TemplatePlan.from_dict(d.pop("plan"))

        template = cls(
            created_at=created_at,
            description=description,
            id=id,
            input_schema=input_schema,
            plan=plan,
        )

        template.additional_properties = d
        return template

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
