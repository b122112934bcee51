//! Domain model: the state enums (mirrored by CHECK constraints in `migrations/`), plan
//! definitions as clients submit them, and tool errors as tools report them.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use serde_json::Value;

macro_rules! string_enum {
    ($(#[$m:meta])* $name:ident { $($variant:ident => $text:literal),+ $(,)? }) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
        #[serde(rename_all = "snake_case")]
        pub enum $name { $($variant),+ }

        impl $name {
            pub const ALL: &'static [$name] = &[$($name::$variant),+];
            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => $text),+ }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl FromStr for $name {
            type Err = String;
            fn from_str(s: &str) -> Result<Self, String> {
                match s {
                    $($text => Ok($name::$variant),)+
                    other => Err(format!("unknown {} {other:?}", stringify!($name))),
                }
            }
        }
    };
}

string_enum!(
    /// Task lifecycle. See docs/state-machine.md.
    TaskStatus {
        Pending => "pending",
        Planning => "planning",
        Running => "running",
        Reflecting => "reflecting",
        Replanning => "replanning",
        Evaluating => "evaluating",
        Succeeded => "succeeded",
        Failed => "failed",
        NeedsIntervention => "needs_intervention",
        Cancelled => "cancelled",
    }
);

impl TaskStatus {
    /// No step of a terminal task is ever started again.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            TaskStatus::Succeeded | TaskStatus::Failed | TaskStatus::Cancelled
        )
    }
}

string_enum!(
    /// Step lifecycle. See docs/state-machine.md.
    StepStatus {
        Blocked => "blocked",
        Ready => "ready",
        Running => "running",
        Succeeded => "succeeded",
        Failed => "failed",
        Skipped => "skipped",
        Superseded => "superseded",
    }
);

string_enum!(
    /// The outcome recorded on an attempt row.
    AttemptStatus {
        Succeeded => "succeeded",
        Failed => "failed",
    }
);

/// Event kinds written to the `events` table (CONTRACT.md lists the binding ones).
pub mod event_kind {
    pub const TASK_SUBMITTED: &str = "task_submitted";
    pub const TOOLS_SELECTED: &str = "tools_selected";
    pub const PLAN_GENERATED: &str = "plan_generated";
    pub const STEP_STARTED: &str = "step_started";
    pub const STEP_COMPLETED: &str = "step_completed";
    pub const STEP_FAILED: &str = "step_failed";
    pub const RETRY_SCHEDULED: &str = "retry_scheduled";
    pub const STEP_RELEASED: &str = "step_released";
    pub const STEP_RESCUED: &str = "step_rescued";
    pub const STEP_REFLECTED: &str = "step_reflected";
    pub const STEP_REPAIRED: &str = "step_repaired";
    pub const OVERALL_REFLECTED: &str = "overall_reflected";
    pub const REPLANNED: &str = "replanned";
    pub const EVALUATION_COMPLETED: &str = "evaluation_completed";
    pub const INTERVENTION_REQUIRED: &str = "intervention_required";
    pub const TASK_RESUMED: &str = "task_resumed";
    pub const TASK_SUCCEEDED: &str = "task_succeeded";
    pub const TASK_FAILED: &str = "task_failed";
    pub const TASK_CANCELLED: &str = "task_cancelled";
}

/// A plan as submitted by a client (CONTRACT.md `plan`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PlanSpec {
    pub steps: Vec<StepSpec>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reasoning: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub estimated_duration: Option<i32>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct StepSpec {
    /// The step key, e.g. `step_1` (the LLM wire format calls it `step_id`).
    #[serde(alias = "step_id")]
    pub id: String,
    #[serde(default)]
    pub name: String,
    /// Tool id; may be empty when the step only runs `actions`.
    #[serde(default)]
    pub tool: String,
    #[serde(default = "empty_object")]
    pub parameters: Value,
    #[serde(default)]
    pub dependencies: Vec<String>,
    #[serde(default)]
    pub expected_output: String,
    #[serde(default)]
    pub optional: bool,
    #[serde(default)]
    pub actions: Vec<ActionSpec>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ActionSpec {
    #[serde(alias = "action_id")]
    pub id: String,
    #[serde(default)]
    pub name: String,
    pub tool: String,
    #[serde(default = "empty_object")]
    pub parameters: Value,
}

pub fn empty_object() -> Value {
    Value::Object(Default::default())
}

/// A failed tool call as tools report it (CONTRACT.md "HTTP tools").
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ToolFailure {
    pub message: String,
    pub category: String,
    pub retryable: bool,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub hints: BTreeMap<String, Value>,
    /// HTTP status when the tool answered with one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_status: Option<u16>,
}

impl ToolFailure {
    pub fn new(category: &str, message: impl Into<String>, retryable: bool) -> Self {
        Self {
            message: message.into(),
            category: category.into(),
            retryable,
            hints: BTreeMap::new(),
            http_status: None,
        }
    }
}

/// Error category of an attempt lost with its worker.
pub const WORKER_LOST: &str = "worker_lost";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enums_round_trip_through_text_and_json() {
        for s in TaskStatus::ALL {
            assert_eq!(s.as_str().parse::<TaskStatus>().unwrap(), *s);
            assert_eq!(
                serde_json::to_value(s).unwrap(),
                Value::String(s.as_str().into())
            );
        }
        for s in StepStatus::ALL {
            assert_eq!(s.as_str().parse::<StepStatus>().unwrap(), *s);
        }
        assert!("done".parse::<TaskStatus>().is_err());
    }

    /// docs/state-machine.md names every status value.
    #[test]
    fn state_machine_doc_names_every_status() {
        let doc = include_str!("../docs/state-machine.md");
        for s in TaskStatus::ALL {
            assert!(
                doc.contains(&format!("`{}`", s.as_str())),
                "task status {s} missing"
            );
        }
        for s in StepStatus::ALL {
            assert!(
                doc.contains(&format!("`{}`", s.as_str())),
                "step status {s} missing"
            );
        }
    }

    /// The CHECK constraints in the migration list exactly the enum values.
    #[test]
    fn migration_check_constraints_match_enums() {
        let sql = include_str!("../migrations/20261122000001_core.sql");
        let task_check: String = TaskStatus::ALL
            .iter()
            .map(|s| format!("'{}'", s.as_str()))
            .collect::<Vec<_>>()
            .join(", ");
        let flat: String = sql.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            flat.contains(&format!("status IN ({task_check})")),
            "tasks.status CHECK drifted from TaskStatus"
        );
        let step_check: String = StepStatus::ALL
            .iter()
            .map(|s| format!("'{}'", s.as_str()))
            .collect::<Vec<_>>()
            .join(", ");
        assert!(
            flat.contains(&format!("status IN ({step_check})")),
            "steps.status CHECK drifted from StepStatus"
        );
    }
}
