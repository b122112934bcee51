//! Child tasks (pure): what the built-in `task` asks for, from its resolved parameters
//! (`{"template" | "plan", "input"?, "description"?, "wait"?}`), and the child's plan once its
//! template is known. The store starts the child and records its parent; the step waits for it
//! on a wait of kind `child` ([`super::wait::WaitKind::Child`]).

use serde_json::{Value, json};

use super::model::{PlanSpec, ToolFailure};
use super::template::{self, TemplateDef};

/// What a step's `task` call starts.
#[derive(Debug, Clone, PartialEq)]
pub struct ChildSpec {
    pub source: Source,
    /// The child's `context`, and its template's `input`.
    pub input: Value,
    pub description: Option<String>,
    /// Wait for the child to end (default); otherwise the step succeeds with its id at once.
    pub wait: bool,
}

/// Where the child's plan comes from.
#[derive(Debug, Clone, PartialEq)]
pub enum Source {
    Template(String),
    Plan(PlanSpec),
}

fn bad(message: impl Into<String>) -> ToolFailure {
    ToolFailure::new("parameter_error", message, false)
}

impl ChildSpec {
    /// The call's parameters, read (a parameter error names what is wrong).
    pub fn from_params(p: &Value) -> Result<ChildSpec, ToolFailure> {
        let source = match (p.get("template"), p.get("plan")) {
            (Some(Value::String(t)), None) if !t.is_empty() => Source::Template(t.clone()),
            (None, Some(plan)) => Source::Plan(
                serde_json::from_value(plan.clone())
                    .map_err(|e| bad(format!("task: plan is not a plan: {e}")))?,
            ),
            (Some(_), Some(_)) => return Err(bad("task: give a template or a plan, not both")),
            _ => return Err(bad("task needs a \"template\" (its id) or a \"plan\"")),
        };
        let input = match p.get("input") {
            None | Some(Value::Null) => json!({}),
            Some(v @ Value::Object(_)) => v.clone(),
            Some(_) => return Err(bad("task: input must be an object")),
        };
        let description = match p.get("description") {
            None | Some(Value::Null) => None,
            Some(Value::String(d)) => Some(d.clone()),
            Some(_) => return Err(bad("task: description must be a string")),
        };
        let wait = match p.get("wait") {
            None | Some(Value::Null) => true,
            Some(Value::Bool(w)) => *w,
            Some(_) => return Err(bad("task: wait must be true or false")),
        };
        Ok(ChildSpec {
            source,
            input,
            description,
            wait,
        })
    }

    /// The child's plan and description: its own plan, or its template's instantiated with
    /// `input` (checked against the template's `input_schema`).
    pub fn plan(&self, template: Option<&TemplateDef>) -> Result<(PlanSpec, String), ToolFailure> {
        let (plan, description) = match (&self.source, template) {
            (Source::Plan(p), _) => (p.clone(), String::new()),
            (Source::Template(id), None) => {
                return Err(bad(format!("task: template {id:?} is not registered")));
            }
            (Source::Template(id), Some(t)) => {
                let wrong = super::schema::violations(&t.input_schema, &self.input);
                if !wrong.is_empty() {
                    return Err(bad(format!(
                        "task: input does not match template {id:?}'s input_schema: {}",
                        wrong.join("; ")
                    )));
                }
                let plan = template::instantiate(&t.plan, &self.input).map_err(bad)?;
                let plan: PlanSpec = serde_json::from_value(plan)
                    .map_err(|e| bad(format!("task: template {id:?} with this input: {e}")))?;
                (plan, t.description.clone())
            }
        };
        let description = match &self.description {
            Some(d) if !d.trim().is_empty() => d.clone(),
            _ if !description.trim().is_empty() => description,
            _ => match &self.source {
                Source::Template(id) => format!("template {id}"),
                Source::Plan(_) => "child task".to_string(),
            },
        };
        Ok((plan, description))
    }
}

/// How far a tree of child tasks may grow (`[limits] max_child_depth`, `max_descendants`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TreeLimits {
    /// A root's children are at depth 1.
    pub max_depth: i32,
    /// Tasks started under one root over its life (children of children included).
    pub max_descendants: i32,
}

/// Why no child is started now: the parent has ended or been cancelled (its step is being
/// aborted), or the tree is at a limit (the task stops with the category as its reason).
pub fn refused(parent_status: &str) -> ToolFailure {
    ToolFailure::new(
        super::model::CANCELLED,
        format!("the task is {parent_status}: no child task is started under it"),
        false,
    )
}

/// `Err` when a child at `depth` (its parent's depth + 1) would be deeper than the limit.
pub fn check_depth(depth: i32, limits: TreeLimits) -> Result<(), ToolFailure> {
    if depth <= limits.max_depth {
        return Ok(());
    }
    Err(ToolFailure::new(
        super::failure::category::CHILD_DEPTH_EXCEEDED,
        format!(
            "task: the child would be at depth {depth}; at most {} is allowed ([limits] max_child_depth)",
            limits.max_depth
        ),
        false,
    ))
}

/// The failure of a call past `[limits] max_descendants`.
pub fn descendants_exceeded(limits: TreeLimits) -> ToolFailure {
    ToolFailure::new(
        super::failure::category::DESCENDANTS_EXCEEDED,
        format!(
            "task: its root task has started {} descendant tasks, the most allowed ([limits] max_descendants)",
            limits.max_descendants
        ),
        false,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_are_read_and_bad_ones_are_parameter_errors() {
        let c = ChildSpec::from_params(&json!({"template": "t", "input": {"a": 1}})).unwrap();
        assert_eq!(c.source, Source::Template("t".into()));
        assert!(c.wait);
        let c = ChildSpec::from_params(
            &json!({"plan": {"steps": [{"id": "s", "tool": "echo"}]}, "wait": false}),
        )
        .unwrap();
        assert!(matches!(c.source, Source::Plan(_)));
        assert!(!c.wait);
        for (p, says) in [
            (json!({}), "needs a"),
            (json!({"template": "t", "plan": {"steps": []}}), "not both"),
            (json!({"template": ""}), "needs a"),
            (json!({"plan": {"nope": 1}}), "not a plan"),
            (
                json!({"template": "t", "input": [1]}),
                "input must be an object",
            ),
            (json!({"template": "t", "wait": "yes"}), "wait must be"),
            (
                json!({"template": "t", "description": 3}),
                "description must be",
            ),
        ] {
            let f = ChildSpec::from_params(&p).unwrap_err();
            assert_eq!(f.category, "parameter_error");
            assert!(!f.retryable);
            assert!(
                f.message.contains(says),
                "{p}: {says:?} not in {:?}",
                f.message
            );
        }
    }

    #[test]
    fn a_template_is_instantiated_with_its_checked_input() {
        let t = TemplateDef {
            id: "greet".into(),
            description: "Greet someone".into(),
            input_schema: json!({"type": "object", "required": ["name"],
                                 "properties": {"name": {"type": "string"}}}),
            plan: json!({"steps": [{"id": "s", "tool": "echo", "parameters": {"to": "${input.name}"}}]}),
            concurrency_key: None,
            max_cost: None,
            created_at: chrono::Utc::now(),
            tenant: "default".into(),
        };
        let c = ChildSpec::from_params(&json!({"template": "greet", "input": {"name": "Ada"}}))
            .unwrap();
        let (plan, description) = c.plan(Some(&t)).unwrap();
        assert_eq!(plan.steps[0].parameters, json!({"to": "Ada"}));
        assert_eq!(description, "Greet someone");
        let wrong =
            ChildSpec::from_params(&json!({"template": "greet", "input": {"name": 3}})).unwrap();
        assert!(
            wrong
                .plan(Some(&t))
                .unwrap_err()
                .message
                .contains("input_schema")
        );
        assert!(c.plan(None).unwrap_err().message.contains("not registered"));
    }

    #[test]
    fn a_tree_is_held_to_its_depth_and_the_failures_stop_their_task() {
        let l = TreeLimits {
            max_depth: 3,
            max_descendants: 10,
        };
        for depth in 1..=3 {
            check_depth(depth, l).unwrap();
        }
        let f = check_depth(4, l).unwrap_err();
        assert_eq!(f.category, "child_depth_exceeded");
        assert!(f.message.contains("max_child_depth"), "{}", f.message);
        assert!(!f.retryable);
        let f = descendants_exceeded(l);
        assert_eq!(f.category, "descendants_exceeded");
        assert!(f.message.contains("10"), "{}", f.message);
        for f in [check_depth(4, l).unwrap_err(), descendants_exceeded(l)] {
            assert!(super::super::failure::stops_task(&f.category));
        }
        assert!(!super::super::failure::stops_task(
            &refused("cancelled").category
        ));
    }
}
