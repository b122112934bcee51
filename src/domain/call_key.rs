//! One idempotency key per tool call (CONTRACT.md "Exactly once, and bounded").
//!
//! A call is the same call through every attempt that repeats it: a retry after an error or a
//! timeout, a rescue after a lost lease, a worker's crash, a resume without changes. So its key
//! is a pure function of what identifies the call, read from durable state, and never of the
//! attempt, the worker, the lease or a callback token:
//!
//! ```text
//! tr1- + hex(first 16 bytes of HMAC-SHA256(deployment secret,
//!        "trellis-call/1" | task id | step row id | call name | tool id
//!        | RFC 8785 JSON of the resolved parameters | RFC 8785 JSON of the feedback or null))
//! ```
//!
//! (`|`: each part length-prefixed). The step row id is what recovery changes when it means a
//! new call: a repair inserts a new row, a replan or a rerun a new plan version's rows, while a
//! retry, a rescue, a resume and another step's repair keep the row. New parameters (a tier-1
//! retry with adjusted parameters, an approver's edit, changed runtime metadata) and another
//! tool (an alternative, `retry_with_tool`) change the key too. The call name tells a step's
//! own call (`fetch`) from its actions' (`fetch.login`) and a map's items (`m[3]`) apart.
//!
//! The HMAC keys the derivation with a per-deployment secret, so a key says nothing of the
//! parameters (which may hold credentials) and cannot be guessed from a task id.

use hmac::{Hmac, Mac};
use serde_json::Value;
use sha2::Sha256;
use uuid::Uuid;

/// The prefix of every key: the derivation's version.
pub const PREFIX: &str = "tr1-";

/// The deployment's secret the keys are derived with (kept in the database, read by each
/// worker when it registers).
#[derive(Clone)]
pub struct CallKeys {
    secret: Vec<u8>,
}

impl std::fmt::Debug for CallKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CallKeys([secret])")
    }
}

/// What identifies one call.
#[derive(Debug, Clone, Copy)]
pub struct Call<'a> {
    pub task_id: Uuid,
    /// The step row the call belongs to (`steps.id`).
    pub step_row: Uuid,
    /// The step's key, `<step>.<action>` for an action.
    pub name: &'a str,
    pub tool: &'a str,
    /// As resolved for the call (placeholders filled, overrides merged).
    pub parameters: &'a Value,
    /// Why a producer step runs again (`feedback`), if it does.
    pub feedback: Option<&'a Value>,
}

impl CallKeys {
    pub fn new(secret: Vec<u8>) -> Self {
        Self { secret }
    }

    /// The key of `call`: `tr1-` and 32 lowercase hex digits.
    pub fn key(&self, call: &Call<'_>) -> String {
        let mut mac =
            Hmac::<Sha256>::new_from_slice(&self.secret).expect("HMAC takes a key of any length");
        let mut part = |bytes: &[u8]| {
            mac.update(&(bytes.len() as u64).to_be_bytes());
            mac.update(bytes);
        };
        part(b"trellis-call/1");
        part(call.task_id.as_bytes());
        part(call.step_row.as_bytes());
        part(call.name.as_bytes());
        part(call.tool.as_bytes());
        part(&canonical(call.parameters));
        part(&canonical(call.feedback.unwrap_or(&Value::Null)));
        let digest = mac.finalize().into_bytes();
        format!("{PREFIX}{}", hex::encode(&digest[..16]))
    }
}

/// `v` as RFC 8785 canonical JSON: the same bytes for the same value whatever order its keys
/// were written or stored in.
fn canonical(v: &Value) -> Vec<u8> {
    serde_json_canonicalizer::to_vec(v).expect("a JSON value always canonicalizes")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn keys() -> CallKeys {
        CallKeys::new(b"a deployment secret of some length".to_vec())
    }

    fn base() -> (Uuid, Uuid, Value) {
        (
            Uuid::parse_str("0196a000-0000-7000-8000-000000000001").unwrap(),
            Uuid::parse_str("0196a000-0000-7000-8000-0000000000aa").unwrap(),
            json!({"amount": 5, "to": "acct_1", "meta": {"b": 1, "a": [1, 2]}}),
        )
    }

    #[test]
    fn a_key_is_pinned_so_a_new_build_keeps_every_key_in_flight() {
        let (task, row, p) = base();
        let call = Call {
            task_id: task,
            step_row: row,
            name: "charge",
            tool: "payments",
            parameters: &p,
            feedback: None,
        };
        let k = keys().key(&call);
        // computed independently (Python's hmac, json.dumps with sorted keys and no spaces)
        assert_eq!(k, "tr1-2d77af8bca7a8403632792063ae101a2");
        assert_eq!(k.len(), 36);
        assert!(
            k[4..]
                .bytes()
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
        );
    }

    #[test]
    fn the_key_ignores_key_order_and_changes_with_every_input() {
        let (task, row, p) = base();
        let reordered: Value =
            serde_json::from_str(r#"{"meta": {"a": [1, 2], "b": 1}, "to": "acct_1", "amount": 5}"#)
                .unwrap();
        let fb = json!({"failed_step": "b"});
        let call = Call {
            task_id: task,
            step_row: row,
            name: "charge",
            tool: "payments",
            parameters: &p,
            feedback: None,
        };
        let k = keys();
        let same = k.key(&call);
        assert_eq!(
            k.key(&Call {
                parameters: &reordered,
                ..call
            }),
            same
        );
        let other_params = json!({"amount": 6, "to": "acct_1", "meta": {"b": 1, "a": [1, 2]}});
        let variants = [
            Call {
                task_id: Uuid::now_v7(),
                ..call
            },
            Call {
                step_row: Uuid::now_v7(),
                ..call
            },
            Call {
                name: "charge.fee",
                ..call
            },
            Call {
                tool: "payments_v2",
                ..call
            },
            Call {
                parameters: &other_params,
                ..call
            },
            Call {
                feedback: Some(&fb),
                ..call
            },
        ];
        let mut seen = std::collections::HashSet::from([same.clone()]);
        for v in variants {
            assert!(seen.insert(k.key(&v)), "{v:?} gave a key already seen");
        }
        // another deployment's secret: another key for the same call
        assert_ne!(CallKeys::new(b"another".to_vec()).key(&call), same);
        // the key tells nothing of the parameters
        assert!(!same.contains("acct"));
    }
}
