from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from typing_extensions import Self

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.template_input_input_schema_type_0 import (
        TemplateInputInputSchemaType0,
    )
    from ..models.template_input_plan import TemplateInputPlan


T = TypeVar("T", bound="TemplateInput")


@_attrs_define
class TemplateInput:
    """`POST /templates`.

    Attributes:
        id (str):
        plan (TemplateInputPlan): a plan whose strings may use ${input.key} / ${input.key.sub}
        concurrency_key (None | str | Unset): The concurrency key of the tasks made from it: text with `${input.key}`
            and
            `${metadata.key}` placeholders (e.g. `"${metadata.customer_id}"`), filled at each
            submit. A submit's own `concurrency_key` wins.
        description (str | Unset): The default description of the tasks made from it.
        input_schema (None | TemplateInputInputSchemaType0 | Unset): JSON Schema of the submit's input (default
            `{"type":"object"}`); when it declares
            properties, every `${input.key}` must be one of them.
        max_cost (float | None | Unset): The `limits.max_cost` of the tasks made from it (a submit's own wins).
    """

    id: str
    plan: TemplateInputPlan
    concurrency_key: None | str | Unset = UNSET
    description: str | Unset = UNSET
    input_schema: None | TemplateInputInputSchemaType0 | Unset = UNSET
    max_cost: float | None | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        from ..models.template_input_input_schema_type_0 import (
            TemplateInputInputSchemaType0,
        )

        id = self.id

        plan = self.plan.to_dict()

        concurrency_key: None | str | Unset
        if isinstance(self.concurrency_key, Unset):
            concurrency_key = UNSET
        else:
            concurrency_key = self.concurrency_key

        description = self.description

        input_schema: dict[str, Any] | None | Unset
        if isinstance(self.input_schema, Unset):
            input_schema = UNSET
        elif isinstance(self.input_schema, TemplateInputInputSchemaType0):
            input_schema = self.input_schema.to_dict()
        else:
            input_schema = self.input_schema

        max_cost: float | None | Unset
        if isinstance(self.max_cost, Unset):
            max_cost = UNSET
        else:
            max_cost = self.max_cost

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "id": id,
                "plan": plan,
            }
        )
        if concurrency_key is not UNSET:
            field_dict["concurrency_key"] = concurrency_key
        if description is not UNSET:
            field_dict["description"] = description
        if input_schema is not UNSET:
            field_dict["input_schema"] = input_schema
        if max_cost is not UNSET:
            field_dict["max_cost"] = max_cost

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.template_input_input_schema_type_0 import (
            TemplateInputInputSchemaType0,
        )
        from ..models.template_input_plan import TemplateInputPlan

        d = dict(src_dict)
        id = d.pop("id")

        plan = TemplateInputPlan.from_dict(d.pop("plan"))

        def _parse_concurrency_key(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        concurrency_key = _parse_concurrency_key(d.pop("concurrency_key", UNSET))

        description = d.pop("description", UNSET)

        def _parse_input_schema(
            data: object,
        ) -> None | TemplateInputInputSchemaType0 | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                input_schema_type_0 = TemplateInputInputSchemaType0.from_dict(data)

                return input_schema_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | TemplateInputInputSchemaType0 | Unset, data)

        input_schema = _parse_input_schema(d.pop("input_schema", UNSET))

        def _parse_max_cost(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        max_cost = _parse_max_cost(d.pop("max_cost", UNSET))

        template_input = cls(
            id=id,
            plan=plan,
            concurrency_key=concurrency_key,
            description=description,
            input_schema=input_schema,
            max_cost=max_cost,
        )

        return template_input
