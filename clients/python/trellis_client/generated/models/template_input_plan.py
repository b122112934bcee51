from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from typing_extensions import Self

if TYPE_CHECKING:
    from ..models.template_input_plan_steps_item import TemplateInputPlanStepsItem


T = TypeVar("T", bound="TemplateInputPlan")


@_attrs_define
class TemplateInputPlan:
    """a plan whose strings may use ${input.key} / ${input.key.sub}

    Attributes:
        steps (list[TemplateInputPlanStepsItem]):
    """

    steps: list[TemplateInputPlanStepsItem]
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        steps = []
        for steps_item_data in self.steps:
            steps_item = steps_item_data.to_dict()
            steps.append(steps_item)

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "steps": steps,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.template_input_plan_steps_item import TemplateInputPlanStepsItem

        d = dict(src_dict)
        steps = []
        _steps = d.pop("steps")
        for steps_item_data in _steps:
            steps_item = TemplateInputPlanStepsItem.from_dict(steps_item_data)

            steps.append(steps_item)

        template_input_plan = cls(
            steps=steps,
        )

        template_input_plan.additional_properties = d
        return template_input_plan

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
