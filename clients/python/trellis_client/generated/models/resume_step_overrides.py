from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from typing_extensions import Self

if TYPE_CHECKING:
    from ..models.step_override import StepOverride


T = TypeVar("T", bound="ResumeStepOverrides")


@_attrs_define
class ResumeStepOverrides:
    """By step id: parameters merged into the step's, or another tool."""

    additional_properties: dict[str, StepOverride] = _attrs_field(
        init=False, factory=dict
    )

    def to_dict(self) -> dict[str, Any]:

        field_dict: dict[str, Any] = {}
        for prop_name, prop in self.additional_properties.items():
            field_dict[prop_name] = prop.to_dict()

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.step_override import StepOverride

        d = dict(src_dict)
        resume_step_overrides = cls()

        additional_properties = {}
        for prop_name, prop_dict in d.items():
            additional_property = StepOverride.from_dict(prop_dict)

            additional_properties[prop_name] = additional_property

        resume_step_overrides.additional_properties = additional_properties
        return resume_step_overrides

    @property
    def additional_keys(self) -> list[str]:
        return list(self.additional_properties.keys())

    def __getitem__(self, key: str) -> StepOverride:
        return self.additional_properties[key]

    def __setitem__(self, key: str, value: StepOverride) -> None:
        self.additional_properties[key] = value

    def __delitem__(self, key: str) -> None:
        del self.additional_properties[key]

    def __contains__(self, key: str) -> bool:
        return key in self.additional_properties
