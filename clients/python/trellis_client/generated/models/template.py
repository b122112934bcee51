from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from typing_extensions import Self

from ..types import UNSET, Unset

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
        tenant (str): The tenant whose submits may name it.
        concurrency_key (None | str | Unset): The concurrency key of the tasks made from it (`${input.…}` /
            `${metadata.…}`
            placeholders, filled at each submit); a submit's own key wins.
        max_cost (float | None | Unset): The `max_cost` of the tasks made from it (a submit's own `limits.max_cost`
            wins).
    """

    created_at: datetime.datetime
    description: str
    id: str
    input_schema: TemplateInputSchema
    plan: TemplatePlan
    tenant: str
    concurrency_key: None | str | Unset = UNSET
    max_cost: float | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        created_at = self.created_at.isoformat()

        description = self.description

        id = self.id

        input_schema = self.input_schema.to_dict()

        plan = self.plan.to_dict()

        tenant = self.tenant

        concurrency_key: None | str | Unset
        if isinstance(self.concurrency_key, Unset):
            concurrency_key = UNSET
        else:
            concurrency_key = self.concurrency_key

        max_cost: float | None | Unset
        if isinstance(self.max_cost, Unset):
            max_cost = UNSET
        else:
            max_cost = self.max_cost

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "created_at": created_at,
                "description": description,
                "id": id,
                "input_schema": input_schema,
                "plan": plan,
                "tenant": tenant,
            }
        )
        if concurrency_key is not UNSET:
            field_dict["concurrency_key"] = concurrency_key
        if max_cost is not UNSET:
            field_dict["max_cost"] = max_cost

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

        tenant = d.pop("tenant")

        def _parse_concurrency_key(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        concurrency_key = _parse_concurrency_key(d.pop("concurrency_key", UNSET))

        def _parse_max_cost(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        max_cost = _parse_max_cost(d.pop("max_cost", UNSET))

        template = cls(
            created_at=created_at,
            description=description,
            id=id,
            input_schema=input_schema,
            plan=plan,
            tenant=tenant,
            concurrency_key=concurrency_key,
            max_cost=max_cost,
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
