//! `[limits]`: input limits (CONTRACT.md "Input limits").

use serde::Deserialize;

use super::ConfigError;

/// Input limits (CONTRACT.md "Input limits").
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LimitSettings {
    /// A submitted (or resumed) plan with more steps is a 422.
    pub max_steps_per_plan: u32,
    /// Money a task may spend, in the price map's currency, unless its own `limits.max_cost` or
    /// its template's says otherwise (0: no cap).
    pub max_cost: f64,
    /// A task that has spent this fraction of its `max_cost` gets a `cost_warning` event.
    pub cost_warn_fraction: f64,
    /// How deep a tree of child tasks may grow: a root's children are at depth 1. A `task`
    /// call that would start a child deeper fails and stops its task (`child_depth_exceeded`).
    pub max_child_depth: u32,
    /// How many tasks may descend from one root task, over its whole life. A `task` call past
    /// it fails and stops its task (`descendants_exceeded`).
    pub max_descendants: u32,
    /// The largest `map.max_items` a plan may ask for (a 422 past it), and the most items any
    /// map runs.
    pub max_map_items: u32,
    /// How long a parent step waits on a child stopped in `needs_intervention` before the step
    /// fails (`child_task_failed`) and the parent's recovery takes over (0: at once).
    pub child_intervention_wait_secs: u64,
}

impl LimitSettings {
    /// What every plan is held to.
    pub fn plan_bounds(&self) -> crate::domain::plan::Bounds {
        crate::domain::plan::Bounds {
            max_steps: self.max_steps_per_plan as usize,
            max_map_items: self.max_map_items,
        }
    }

    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        let bad = |m: &str| Err(ConfigError::Invalid(m.to_string()));
        if !(self.max_cost.is_finite() && (0.0..=1e9).contains(&self.max_cost)) {
            return bad("limits.max_cost must be between 0 (no cap) and 1000000000");
        }
        if !(self.cost_warn_fraction > 0.0 && self.cost_warn_fraction <= 1.0) {
            return bad("limits.cost_warn_fraction must be above 0 and at most 1");
        }
        if !(1..=100).contains(&self.max_child_depth) {
            return bad("limits.max_child_depth must be between 1 and 100");
        }
        if !(1..=10_000_000).contains(&self.max_descendants) {
            return bad("limits.max_descendants must be between 1 and 10000000");
        }
        if !(1..=1_000_000).contains(&self.max_map_items) {
            return bad("limits.max_map_items must be between 1 and 1000000");
        }
        if self.child_intervention_wait_secs > 365 * 86_400 {
            return bad("limits.child_intervention_wait_secs must be at most a year (31536000)");
        }
        if !(1..=100_000).contains(&self.max_steps_per_plan) {
            return bad("limits.max_steps_per_plan must be between 1 and 100000");
        }
        Ok(())
    }
}

impl Default for LimitSettings {
    fn default() -> Self {
        Self {
            max_steps_per_plan: 1000,
            max_cost: 0.0,
            cost_warn_fraction: crate::domain::limits::DEFAULT_COST_WARN_FRACTION,
            max_child_depth: 8,
            max_descendants: 10_000,
            max_map_items: 10_000,
            child_intervention_wait_secs: 0,
        }
    }
}
