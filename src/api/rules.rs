//! Input rules more than one resource checks: a task's limits (`LimitsInput`), priorities,
//! a plan's size and the tools it names, webhook targets and event kinds, the `{id}` of a task
//! route. A leaf beside `tasks`, `templates`, `schedules`, `webhooks` and `mcp_servers`, so
//! that none of them imports another for a rule.

use std::collections::HashSet;

use serde::Deserialize;
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

use super::{ApiError, AppState};
use crate::domain::{Limits, MAX_TASK_TIMEOUT_SECS, PlanSpec};

const MAX_LIMIT_VALUE: i32 = 100;

/// Event kinds a webhook may ask for.
pub(super) fn check_event_kinds(kinds: &[String]) -> Result<(), ApiError> {
    let known = crate::domain::event::Event::KINDS;
    match kinds.iter().find(|k| !known.contains(&k.as_str())) {
        Some(k) => Err(ApiError::validation(format!(
            "unknown event kind {k:?}; one of {}",
            known.join(", ")
        ))),
        None => Ok(()),
    }
}

/// An http(s) URL of at most 2000 characters.
pub(super) fn check_webhook_url(url: &str) -> Result<(), ApiError> {
    let ok = url.len() <= 2000
        && reqwest::Url::parse(url)
            .is_ok_and(|u| matches!(u.scheme(), "http" | "https") && u.host().is_some());
    if ok {
        Ok(())
    } else {
        Err(ApiError::validation(format!(
            "webhook url must be an absolute http(s) URL: {url:?}"
        )))
    }
}

/// A webhook's target, checked at registration as a tool's endpoint is: an absolute http(s)
/// URL that the outbound guard does not refuse as a literal address (a name is checked when a
/// delivery resolves it). Only its deliveries would be refused otherwise, one by one.
pub(super) fn check_webhook_target(st: &AppState, url: &str) -> Result<(), ApiError> {
    check_webhook_url(url)?;
    let parsed = reqwest::Url::parse(url)
        .map_err(|_| ApiError::validation(format!("webhook url is not a URL: {url:?}")))?;
    st.outbound.check_url(&parsed).map_err(|b| {
        ApiError::validation(format!("webhook url refused by the outbound guard: {b}"))
    })
}

/// Limits for one task, over the configured defaults (`[limits]`).
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = Limits)]
pub(super) struct LimitsInput {
    #[schema(minimum = 0, maximum = 100)]
    max_step_retries: Option<i32>,
    #[schema(minimum = 0, maximum = 100)]
    max_single_step_repairs: Option<i32>,
    #[schema(minimum = 0, maximum = 100)]
    max_task_replans: Option<i32>,
    #[schema(minimum = 0, maximum = 100)]
    max_consecutive_failures: Option<i32>,
    /// Cap on LLM calls for this task; past it decisions take their fallbacks.
    #[schema(minimum = 0, maximum = 10000)]
    max_llm_calls: Option<i32>,
    /// Wall-time budget from submission in seconds (0: none); past it the task fails with
    /// `error.code` `deadline_exceeded`.
    #[schema(minimum = 0, maximum = 31622400)]
    task_timeout_secs: Option<i32>,
    /// Cap on LLM tokens for this task; past it decisions take their fallbacks.
    #[schema(minimum = 0, maximum = 1000000000)]
    max_llm_tokens: Option<i64>,
    /// Money the task may spend, in the price map's currency (`/model-prices`, and its tools'
    /// reported `usage.cost`); past it the task stops with `error.code` `cost_limit_exceeded`.
    #[schema(minimum = 0, maximum = 1000000000)]
    pub(super) max_cost: Option<f64>,
}

impl From<Limits> for LimitsInput {
    /// The client-settable part of a task's limits.
    fn from(l: Limits) -> Self {
        LimitsInput {
            max_step_retries: Some(l.max_step_retries),
            max_single_step_repairs: Some(l.max_single_step_repairs),
            max_task_replans: Some(l.max_task_replans),
            max_consecutive_failures: Some(l.max_consecutive_failures),
            max_llm_calls: l.max_llm_calls,
            task_timeout_secs: Some(l.task_timeout_secs),
            max_llm_tokens: l.max_llm_tokens,
            max_cost: l.max_cost,
        }
    }
}

const MAX_LLM_CALLS: i32 = 10_000;
const MAX_LLM_TOKENS: i64 = 1_000_000_000;

pub(super) fn apply_limits(
    mut base: Limits,
    input: Option<LimitsInput>,
) -> Result<Limits, ApiError> {
    let Some(l) = input else { return Ok(base) };
    let fields = [
        (
            "max_step_retries",
            l.max_step_retries,
            &mut base.max_step_retries,
        ),
        (
            "max_single_step_repairs",
            l.max_single_step_repairs,
            &mut base.max_single_step_repairs,
        ),
        (
            "max_task_replans",
            l.max_task_replans,
            &mut base.max_task_replans,
        ),
        (
            "max_consecutive_failures",
            l.max_consecutive_failures,
            &mut base.max_consecutive_failures,
        ),
    ];
    if let Some(n) = l.max_llm_calls {
        if !(0..=MAX_LLM_CALLS).contains(&n) {
            return Err(ApiError::validation(format!(
                "limits.max_llm_calls must be between 0 and {MAX_LLM_CALLS}"
            )));
        }
        base.max_llm_calls = Some(n);
    }
    if let Some(n) = l.max_llm_tokens {
        if !(0..=MAX_LLM_TOKENS).contains(&n) {
            return Err(ApiError::validation(format!(
                "limits.max_llm_tokens must be between 0 and {MAX_LLM_TOKENS}"
            )));
        }
        base.max_llm_tokens = Some(n);
    }
    if let Some(c) = l.max_cost {
        if !(c.is_finite() && (0.0..=1e9).contains(&c)) {
            return Err(ApiError::validation(
                "limits.max_cost must be between 0 and 1000000000",
            ));
        }
        base.max_cost = Some(c);
    }
    if let Some(n) = l.task_timeout_secs {
        if !(0..=MAX_TASK_TIMEOUT_SECS).contains(&n) {
            return Err(ApiError::validation(format!(
                "limits.task_timeout_secs must be between 0 (no deadline) and {MAX_TASK_TIMEOUT_SECS}"
            )));
        }
        base.task_timeout_secs = n;
    }
    for (name, value, slot) in fields {
        if let Some(v) = value {
            if !(0..=MAX_LIMIT_VALUE).contains(&v) {
                return Err(ApiError::validation(format!(
                    "limits.{name} must be between 0 and {MAX_LIMIT_VALUE}"
                )));
            }
            *slot = v;
        }
    }
    Ok(base)
}

/// Task priorities clients may give (higher runs first).
pub const PRIORITIES: std::ops::RangeInclusive<i32> = -1000..=1000;

/// Longest sleep a `sleep` step may ask for, in milliseconds (one hour).
pub const MAX_SLEEP_MS: u64 = crate::tools::MAX_SLEEP_MS;

/// `[limits] max_steps_per_plan` and `max_map_items`, and what a plan's literal parameters can
/// be checked for before it runs (a `sleep` within its range).
pub(super) fn check_plan_size(st: &AppState, plan: &PlanSpec) -> Result<(), ApiError> {
    crate::domain::plan::check_bounds(plan, st.settings.limits.plan_bounds())?;
    let calls = plan.steps.iter().flat_map(|s| {
        std::iter::once((&s.id, &s.tool, &s.parameters)).chain(
            s.actions
                .iter()
                .map(move |a| (&s.id, &a.tool, &a.parameters)),
        )
    });
    for (step, tool, params) in calls {
        if tool != "sleep" {
            continue;
        }
        match params.get("ms") {
            Some(Value::String(s)) if s.contains("${") || s.contains("{{") => {}
            Some(v) if v.as_u64().is_some_and(|ms| ms <= MAX_SLEEP_MS) => {}
            _ => {
                return Err(ApiError::validation(format!(
                    "step {step}: sleep needs {{\"ms\": n}} with n between 0 and {MAX_SLEEP_MS}"
                )));
            }
        }
    }
    Ok(())
}

/// Every tool id a plan names (steps and actions).
pub(super) fn named_tools(plan: &PlanSpec) -> HashSet<String> {
    plan.steps
        .iter()
        .flat_map(|s| std::iter::once(&s.tool).chain(s.actions.iter().map(|a| &a.tool)))
        .cloned()
        .collect()
}

/// The `{id}` of a task route (documentation only: [`super::TaskId`] reads it).
#[derive(IntoParams)]
#[into_params(parameter_in = Path)]
#[allow(dead_code)]
pub(super) struct TaskPath {
    /// A task id.
    id: Uuid,
}
