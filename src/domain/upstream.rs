//! Healing upstream: a step's parameter that broke its tool's schema may have come, through a
//! placeholder, from an earlier step's output. Repairing the failing step cannot fix that; the
//! step that produced the value can do better when told why. This names it. Pure.

use serde_json::Value;

use super::model::ToolFailure;
use super::plan::{self, Reference};

/// Where a bad parameter came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Upstream {
    /// The step whose output the placeholder reads.
    pub producer: String,
    /// JSON pointer of the bad parameter in the failing step's parameters (`/count`).
    pub parameter: String,
    /// The placeholder as written (`${step_1.output.n}`).
    pub placeholder: String,
}

/// The producing step of the first parameter the failure names (its schema violations, `at
/// /count: …`) whose value in the step's own, unresolved `parameters` is — or lies inside — a
/// placeholder reading another step's output. None: the failure names no parameter, or none
/// came from another step.
pub fn upstream_of(parameters: &Value, failure: &ToolFailure) -> Option<Upstream> {
    failure.schema_violations.iter().find_map(|v| {
        let at = v.strip_prefix("at ")?.split(':').next()?.trim();
        source_at(parameters, at)
    })
}

/// The placeholder that put the value at `pointer`: the value there, or the nearest enclosing
/// one that exists in the unresolved parameters (a whole array or object from one placeholder).
fn source_at(parameters: &Value, pointer: &str) -> Option<Upstream> {
    let mut at = pointer;
    while at.starts_with('/') {
        if let Some(Value::String(s)) = parameters.pointer(at)
            && let Ok(refs) = plan::references(&Value::String(s.clone()))
            && let Some(producer) = refs.into_iter().find_map(|r| match r {
                Reference::Step { key, .. } => Some(key),
                _ => None,
            })
        {
            return Some(Upstream {
                producer,
                parameter: pointer.to_string(),
                placeholder: s.clone(),
            });
        }
        at = &at[..at.rfind('/')?];
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn failing(violations: &[&str]) -> ToolFailure {
        let mut f = ToolFailure::new("parameter_error", "does not match", false);
        f.schema_violations = violations.iter().map(|v| v.to_string()).collect();
        f
    }

    #[test]
    fn the_producer_of_a_bad_parameter_is_named() {
        let params = json!({"count": "${step_1.output.n}", "mode": "fast",
                            "tags": "${tagger.output}", "note": "n=${step_1.output.n}"});
        let up = upstream_of(
            &params,
            &failing(&["at /count: \"five\" is not of type \"integer\""]),
        );
        assert_eq!(
            up,
            Some(Upstream {
                producer: "step_1".into(),
                parameter: "/count".into(),
                placeholder: "${step_1.output.n}".into()
            })
        );
        // inside a value one placeholder made
        let up = upstream_of(
            &params,
            &failing(&["at /tags/2: 7 is not of type \"string\""]),
        );
        assert_eq!(
            up.map(|u| (u.producer, u.parameter)),
            Some(("tagger".into(), "/tags/2".into()))
        );
        // embedded in text
        let up = upstream_of(&params, &failing(&["at /note: too long"]));
        assert_eq!(up.map(|u| u.producer), Some("step_1".into()));
    }

    #[test]
    fn a_value_written_in_the_plan_has_no_producer() {
        let params = json!({"count": "five", "ctx": "${context.x}", "m": "${metadata.k}"});
        for v in [
            "at /count: bad",
            "at /ctx: bad",
            "at /m: bad",
            "at /missing: bad",
            "\"count\" is a required property",
            "at : bad",
        ] {
            assert_eq!(upstream_of(&params, &failing(&[v])), None, "{v}");
        }
        assert_eq!(upstream_of(&params, &failing(&[])), None);
        // the first violation with a producer wins
        let params = json!({"a": 1, "b": "${s.output}"});
        let up = upstream_of(&params, &failing(&["at /a: bad", "at /b: bad"]));
        assert_eq!(up.map(|u| u.producer), Some("s".into()));
    }
}
