from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from typing_extensions import Self

if TYPE_CHECKING:
    from ..models.recovery_stats_view_cost_by_template_day_item import (
        RecoveryStatsViewCostByTemplateDayItem,
    )
    from ..models.recovery_stats_view_cost_by_tool_day_item import (
        RecoveryStatsViewCostByToolDayItem,
    )
    from ..models.recovery_stats_view_recovery_by_action_item import (
        RecoveryStatsViewRecoveryByActionItem,
    )
    from ..models.recovery_stats_view_recovery_by_category_item import (
        RecoveryStatsViewRecoveryByCategoryItem,
    )
    from ..models.recovery_stats_view_recovery_by_template_item import (
        RecoveryStatsViewRecoveryByTemplateItem,
    )
    from ..models.recovery_stats_view_recovery_by_tier_item import (
        RecoveryStatsViewRecoveryByTierItem,
    )
    from ..models.recovery_stats_view_recovery_by_tool_item import (
        RecoveryStatsViewRecoveryByToolItem,
    )
    from ..models.recovery_stats_view_recovery_cost_by_tier_item import (
        RecoveryStatsViewRecoveryCostByTierItem,
    )
    from ..models.recovery_stats_view_task_outcomes_item import (
        RecoveryStatsViewTaskOutcomesItem,
    )


T = TypeVar("T", bound="RecoveryStatsView")


@_attrs_define
class RecoveryStatsView:
    """`GET /stats/recovery`: every row of each recovery view (docs/sql-reporting.md).

    Attributes:
        cost_by_template_day (list[RecoveryStatsViewCostByTemplateDayItem]): LLM and tool cost per day and template
            (`""`: none).
        cost_by_tool_day (list[RecoveryStatsViewCostByToolDayItem]): Tool cost per day and tool.
        recovery_by_action (list[RecoveryStatsViewRecoveryByActionItem]): Per day, tier and action (`replan:<strategy>`
            for replans).
        recovery_by_category (list[RecoveryStatsViewRecoveryByCategoryItem]):
        recovery_by_template (list[RecoveryStatsViewRecoveryByTemplateItem]): Per day, template, tier and action;
            `item_actions` counts those on map items.
        recovery_by_tier (list[RecoveryStatsViewRecoveryByTierItem]):
        recovery_by_tool (list[RecoveryStatsViewRecoveryByToolItem]):
        recovery_cost_by_tier (list[RecoveryStatsViewRecoveryCostByTierItem]): What recovery cost by tier and strategy,
            against the steps and tasks it saved (in the
            price map's currency).
        task_outcomes (list[RecoveryStatsViewTaskOutcomesItem]):
    """

    cost_by_template_day: list[RecoveryStatsViewCostByTemplateDayItem]
    cost_by_tool_day: list[RecoveryStatsViewCostByToolDayItem]
    recovery_by_action: list[RecoveryStatsViewRecoveryByActionItem]
    recovery_by_category: list[RecoveryStatsViewRecoveryByCategoryItem]
    recovery_by_template: list[RecoveryStatsViewRecoveryByTemplateItem]
    recovery_by_tier: list[RecoveryStatsViewRecoveryByTierItem]
    recovery_by_tool: list[RecoveryStatsViewRecoveryByToolItem]
    recovery_cost_by_tier: list[RecoveryStatsViewRecoveryCostByTierItem]
    task_outcomes: list[RecoveryStatsViewTaskOutcomesItem]
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        cost_by_template_day = []
        for cost_by_template_day_item_data in self.cost_by_template_day:
            cost_by_template_day_item = cost_by_template_day_item_data.to_dict()
            cost_by_template_day.append(cost_by_template_day_item)

        cost_by_tool_day = []
        for cost_by_tool_day_item_data in self.cost_by_tool_day:
            cost_by_tool_day_item = cost_by_tool_day_item_data.to_dict()
            cost_by_tool_day.append(cost_by_tool_day_item)

        recovery_by_action = []
        for recovery_by_action_item_data in self.recovery_by_action:
            recovery_by_action_item = recovery_by_action_item_data.to_dict()
            recovery_by_action.append(recovery_by_action_item)

        recovery_by_category = []
        for recovery_by_category_item_data in self.recovery_by_category:
            recovery_by_category_item = recovery_by_category_item_data.to_dict()
            recovery_by_category.append(recovery_by_category_item)

        recovery_by_template = []
        for recovery_by_template_item_data in self.recovery_by_template:
            recovery_by_template_item = recovery_by_template_item_data.to_dict()
            recovery_by_template.append(recovery_by_template_item)

        recovery_by_tier = []
        for recovery_by_tier_item_data in self.recovery_by_tier:
            recovery_by_tier_item = recovery_by_tier_item_data.to_dict()
            recovery_by_tier.append(recovery_by_tier_item)

        recovery_by_tool = []
        for recovery_by_tool_item_data in self.recovery_by_tool:
            recovery_by_tool_item = recovery_by_tool_item_data.to_dict()
            recovery_by_tool.append(recovery_by_tool_item)

        recovery_cost_by_tier = []
        for recovery_cost_by_tier_item_data in self.recovery_cost_by_tier:
            recovery_cost_by_tier_item = recovery_cost_by_tier_item_data.to_dict()
            recovery_cost_by_tier.append(recovery_cost_by_tier_item)

        task_outcomes = []
        for task_outcomes_item_data in self.task_outcomes:
            task_outcomes_item = task_outcomes_item_data.to_dict()
            task_outcomes.append(task_outcomes_item)

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "cost_by_template_day": cost_by_template_day,
                "cost_by_tool_day": cost_by_tool_day,
                "recovery_by_action": recovery_by_action,
                "recovery_by_category": recovery_by_category,
                "recovery_by_template": recovery_by_template,
                "recovery_by_tier": recovery_by_tier,
                "recovery_by_tool": recovery_by_tool,
                "recovery_cost_by_tier": recovery_cost_by_tier,
                "task_outcomes": task_outcomes,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.recovery_stats_view_cost_by_template_day_item import (
            RecoveryStatsViewCostByTemplateDayItem,
        )
        from ..models.recovery_stats_view_cost_by_tool_day_item import (
            RecoveryStatsViewCostByToolDayItem,
        )
        from ..models.recovery_stats_view_recovery_by_action_item import (
            RecoveryStatsViewRecoveryByActionItem,
        )
        from ..models.recovery_stats_view_recovery_by_category_item import (
            RecoveryStatsViewRecoveryByCategoryItem,
        )
        from ..models.recovery_stats_view_recovery_by_template_item import (
            RecoveryStatsViewRecoveryByTemplateItem,
        )
        from ..models.recovery_stats_view_recovery_by_tier_item import (
            RecoveryStatsViewRecoveryByTierItem,
        )
        from ..models.recovery_stats_view_recovery_by_tool_item import (
            RecoveryStatsViewRecoveryByToolItem,
        )
        from ..models.recovery_stats_view_recovery_cost_by_tier_item import (
            RecoveryStatsViewRecoveryCostByTierItem,
        )
        from ..models.recovery_stats_view_task_outcomes_item import (
            RecoveryStatsViewTaskOutcomesItem,
        )

        d = dict(src_dict)
        cost_by_template_day = []
        _cost_by_template_day = d.pop("cost_by_template_day")
        for cost_by_template_day_item_data in _cost_by_template_day:
            cost_by_template_day_item = (
                RecoveryStatsViewCostByTemplateDayItem.from_dict(
                    cost_by_template_day_item_data
                )
            )

            cost_by_template_day.append(cost_by_template_day_item)

        cost_by_tool_day = []
        _cost_by_tool_day = d.pop("cost_by_tool_day")
        for cost_by_tool_day_item_data in _cost_by_tool_day:
            cost_by_tool_day_item = RecoveryStatsViewCostByToolDayItem.from_dict(
                cost_by_tool_day_item_data
            )

            cost_by_tool_day.append(cost_by_tool_day_item)

        recovery_by_action = []
        _recovery_by_action = d.pop("recovery_by_action")
        for recovery_by_action_item_data in _recovery_by_action:
            recovery_by_action_item = RecoveryStatsViewRecoveryByActionItem.from_dict(
                recovery_by_action_item_data
            )

            recovery_by_action.append(recovery_by_action_item)

        recovery_by_category = []
        _recovery_by_category = d.pop("recovery_by_category")
        for recovery_by_category_item_data in _recovery_by_category:
            recovery_by_category_item = (
                RecoveryStatsViewRecoveryByCategoryItem.from_dict(
                    recovery_by_category_item_data
                )
            )

            recovery_by_category.append(recovery_by_category_item)

        recovery_by_template = []
        _recovery_by_template = d.pop("recovery_by_template")
        for recovery_by_template_item_data in _recovery_by_template:
            recovery_by_template_item = (
                RecoveryStatsViewRecoveryByTemplateItem.from_dict(
                    recovery_by_template_item_data
                )
            )

            recovery_by_template.append(recovery_by_template_item)

        recovery_by_tier = []
        _recovery_by_tier = d.pop("recovery_by_tier")
        for recovery_by_tier_item_data in _recovery_by_tier:
            recovery_by_tier_item = RecoveryStatsViewRecoveryByTierItem.from_dict(
                recovery_by_tier_item_data
            )

            recovery_by_tier.append(recovery_by_tier_item)

        recovery_by_tool = []
        _recovery_by_tool = d.pop("recovery_by_tool")
        for recovery_by_tool_item_data in _recovery_by_tool:
            recovery_by_tool_item = RecoveryStatsViewRecoveryByToolItem.from_dict(
                recovery_by_tool_item_data
            )

            recovery_by_tool.append(recovery_by_tool_item)

        recovery_cost_by_tier = []
        _recovery_cost_by_tier = d.pop("recovery_cost_by_tier")
        for recovery_cost_by_tier_item_data in _recovery_cost_by_tier:
            recovery_cost_by_tier_item = (
                RecoveryStatsViewRecoveryCostByTierItem.from_dict(
                    recovery_cost_by_tier_item_data
                )
            )

            recovery_cost_by_tier.append(recovery_cost_by_tier_item)

        task_outcomes = []
        _task_outcomes = d.pop("task_outcomes")
        for task_outcomes_item_data in _task_outcomes:
            task_outcomes_item = RecoveryStatsViewTaskOutcomesItem.from_dict(
                task_outcomes_item_data
            )

            task_outcomes.append(task_outcomes_item)

        recovery_stats_view = cls(
            cost_by_template_day=cost_by_template_day,
            cost_by_tool_day=cost_by_tool_day,
            recovery_by_action=recovery_by_action,
            recovery_by_category=recovery_by_category,
            recovery_by_template=recovery_by_template,
            recovery_by_tier=recovery_by_tier,
            recovery_by_tool=recovery_by_tool,
            recovery_cost_by_tier=recovery_cost_by_tier,
            task_outcomes=task_outcomes,
        )

        recovery_stats_view.additional_properties = d
        return recovery_stats_view

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
