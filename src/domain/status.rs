//! Typed statuses and kinds, stored as text. Each enum lists exactly the values of its SQL CHECK
//! constraint (tests in this module compare them with the migrations) and of
//! `docs/state-machine.md`; rows decode into them, so a status never travels as a bare string.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use sqlx::encode::IsNull;
use sqlx::error::BoxDynError;
use sqlx::postgres::{PgArgumentBuffer, PgHasArrayType, PgTypeInfo, PgValueRef};
use sqlx::{Decode, Encode, Postgres, Type};

macro_rules! string_enum {
    ($(#[$m:meta])* $name:ident { $($(#[$vm:meta])* $variant:ident => $text:literal),+ $(,)? }) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(rename_all = "snake_case")]
        pub enum $name { $($(#[$vm])* $variant),+ }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The stored text.
            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => $text),+ }
            }

            /// The value stored as `s`, if any.
            pub fn parse(s: &str) -> Option<Self> {
                match s {
                    $($text => Some($name::$variant),)+
                    _ => None,
                }
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
                Self::parse(s).ok_or_else(|| format!("unknown {} {s:?}", stringify!($name)))
            }
        }

        /// Compare with stored text (`status == "running"`).
        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.as_str() == *other
            }
        }

        impl Type<Postgres> for $name {
            fn type_info() -> PgTypeInfo {
                <&str as Type<Postgres>>::type_info()
            }
            fn compatible(ty: &PgTypeInfo) -> bool {
                <&str as Type<Postgres>>::compatible(ty)
            }
        }

        impl PgHasArrayType for $name {
            fn array_type_info() -> PgTypeInfo {
                <&str as PgHasArrayType>::array_type_info()
            }
        }

        impl Encode<'_, Postgres> for $name {
            fn encode_by_ref(&self, buf: &mut PgArgumentBuffer) -> Result<IsNull, BoxDynError> {
                <&str as Encode<Postgres>>::encode(self.as_str(), buf)
            }
        }

        impl<'r> Decode<'r, Postgres> for $name {
            fn decode(value: PgValueRef<'r>) -> Result<Self, BoxDynError> {
                let text = <&str as Decode<Postgres>>::decode(value)?;
                Ok(text.parse::<$name>()?)
            }
        }
    };
}

string_enum!(
    /// Task lifecycle (`tasks.status`). See docs/state-machine.md.
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
    /// Step lifecycle (`steps.status`). See docs/state-machine.md.
    StepStatus {
        Blocked => "blocked",
        Ready => "ready",
        Running => "running",
        Succeeded => "succeeded",
        Failed => "failed",
        Skipped => "skipped",
        Superseded => "superseded",
        /// Waits for a person, an event, a callback or a time: no worker, no lease.
        Waiting => "waiting",
    }
);

impl StepStatus {
    /// A dependency in one of these lets its dependents run.
    pub fn is_done(self) -> bool {
        matches!(self, StepStatus::Succeeded | StepStatus::Skipped)
    }
}

string_enum!(
    /// The outcome recorded on an attempt row (`attempts.status`).
    AttemptStatus {
        Succeeded => "succeeded",
        Failed => "failed",
    }
);

string_enum!(
    /// A wait's lifecycle (`waits.status`). See docs/state-machine.md.
    WaitStatus {
        Open => "open",
        Resolved => "resolved",
        Expired => "expired",
        Cancelled => "cancelled",
    }
);

string_enum!(
    /// A webhook delivery's lifecycle (`webhook_deliveries.status`). See docs/state-machine.md.
    DeliveryStatus {
        Pending => "pending",
        Delivered => "delivered",
        Dead => "dead",
    }
);

string_enum!(
    /// Decision lifecycle (`decisions.status`). See docs/state-machine.md.
    DecisionStatus {
        Pending => "pending",
        Running => "running",
        Done => "done",
        Cancelled => "cancelled",
    }
);

string_enum!(
    /// The decision kinds (`decisions.kind`).
    DecisionKind {
        /// Plan a description-only task (tool selection, then the plan).
        Plan => "plan",
        StepReflection => "step_reflection",
        StepRepair => "step_repair",
        OverallReflection => "overall_reflection",
        Replan => "replan",
        Evaluation => "evaluation",
    }
);

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::*;

    fn flat(s: &str) -> String {
        s.split_whitespace().collect::<Vec<_>>().join(" ")
    }

    fn check_list<T: Copy>(all: &[T], text: fn(T) -> &'static str, quote: &str) -> String {
        all.iter()
            .map(|s| format!("{quote}{}{quote}", text(*s)))
            .collect::<Vec<_>>()
            .join(", ")
    }

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
        for k in DecisionKind::ALL {
            assert_eq!(DecisionKind::parse(k.as_str()), Some(*k));
            assert_eq!(
                serde_json::to_value(k).unwrap(),
                Value::String(k.as_str().into())
            );
        }
        assert!("done".parse::<TaskStatus>().is_err());
    }

    /// docs/state-machine.md names every status value.
    #[test]
    fn state_machine_doc_names_every_status() {
        let doc = include_str!("../../docs/state-machine.md");
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
        let sql = flat(include_str!("../../migrations/20261122000001_core.sql"));
        let task_check = check_list(TaskStatus::ALL, TaskStatus::as_str, "'");
        assert!(
            sql.contains(&format!("status IN ({task_check})")),
            "tasks.status CHECK drifted from TaskStatus"
        );
        let step_check = check_list(StepStatus::ALL, StepStatus::as_str, "'");
        // the latest migration that redefines the steps CHECK
        let waits = flat(include_str!("../../migrations/20261126000022_waits.sql"));
        assert!(
            waits.contains(&format!("status IN ({step_check})")),
            "steps.status CHECK drifted from StepStatus"
        );
    }

    /// `decisions.kind` CHECK lists exactly the decision kinds; the state-machine doc names the
    /// decision statuses of the `decisions.status` CHECK.
    #[test]
    fn decision_kinds_match_the_schema_and_docs() {
        // the latest migration that redefines the CHECK
        let sql = flat(include_str!(
            "../../migrations/20261122000004_llm_brain.sql"
        ));
        let list = check_list(DecisionKind::ALL, DecisionKind::as_str, "'");
        assert!(
            sql.contains(&format!("kind IN ({list})")),
            "decisions.kind CHECK drifted"
        );
        let doc = include_str!("../../docs/state-machine.md");
        let doc_list = check_list(DecisionKind::ALL, DecisionKind::as_str, "`");
        assert!(
            flat(doc).contains(&doc_list),
            "the decision kinds in docs/state-machine.md drifted"
        );
        let recovery = include_str!("../../migrations/20261122000002_recovery.sql");
        for status in DecisionStatus::ALL {
            assert!(recovery.contains(&format!("'{status}'")));
            assert!(
                doc.contains(&format!("`{status}`")),
                "{status} missing from the doc"
            );
        }
    }
}
