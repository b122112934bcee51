//! The placeholder grammar of CONTRACT.md "Parameters" (pure): what `${…}` and `{{…}}` in a
//! parameter string refer to, parsed once here for plan validation (`plan`) and for resolution
//! at run time (`params`), which both import it.
//!
//! Placeholders: `${step_1}`, `${step_1.output}`, `${step_1.output.a.b}` (a previous step's output),
//! `${metadata.key}` (runtime metadata, then task metadata) and `{{action_1_1.output}}` (an action
//! of the same step). Paths may index arrays with numbers (`items.0.name`). In a map step's
//! parameters, `${item}` (or the map's `as` name, `${item.a.b}`) and `${item_index}` read the
//! item an item step runs with.

use serde_json::Value;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct PlanError {
    pub message: String,
}

pub(super) fn err<T>(message: impl Into<String>) -> Result<T, PlanError> {
    Err(PlanError {
        message: message.into(),
    })
}

/// What a placeholder refers to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reference {
    /// Output of a step (path below `output`).
    Step { key: String, path: Vec<String> },
    /// Runtime metadata, then task metadata.
    Metadata { path: Vec<String> },
    /// The task's `context` (empty path: all of it).
    Context { path: Vec<String> },
    /// Output of an action in the same step.
    Action { id: String, path: Vec<String> },
    /// The item a map's item step runs with (a map step's parameters only).
    Item { path: Vec<String> },
    /// The item's index in the map's list, from 0.
    ItemIndex,
}

/// The name a map step's parameters read its item by, when parsing them.
pub const ITEM_INDEX: &str = "item_index";

/// A piece of a parameter string: literal text or a placeholder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Segment<'a> {
    Text(&'a str),
    Ref { raw: &'a str, reference: Reference },
}

/// Split a string into text and placeholders. Malformed placeholders are errors.
pub fn parse_template(s: &str) -> Result<Vec<Segment<'_>>, PlanError> {
    parse_template_in(s, None)
}

/// [`parse_template`] in a map step's parameters, whose items are read as `item` (the map's
/// `as` name) and `item_index`.
pub fn parse_template_in<'s>(
    s: &'s str,
    item: Option<&str>,
) -> Result<Vec<Segment<'s>>, PlanError> {
    let mut out = Vec::new();
    let mut rest = s;
    let mut offset = 0usize;
    loop {
        let dollar = rest.find("${");
        let brace = rest.find("{{");
        let (start, is_action) = match (dollar, brace) {
            (None, None) => break,
            (Some(d), None) => (d, false),
            (None, Some(b)) => (b, true),
            (Some(d), Some(b)) => {
                if d < b {
                    (d, false)
                } else {
                    (b, true)
                }
            }
        };
        if start > 0 {
            out.push(Segment::Text(&s[offset..offset + start]));
        }
        let close = if is_action { "}}" } else { "}" };
        let body_start = start + 2;
        let Some(end_rel) = rest[body_start..].find(close) else {
            return err(format!("unterminated placeholder in {s:?}"));
        };
        let body = &rest[body_start..body_start + end_rel];
        let total = body_start + end_rel + close.len();
        let raw = &s[offset + start..offset + total];
        let reference = parse_reference(body.trim(), is_action, item).map_err(|m| PlanError {
            message: format!("placeholder {raw}: {m}"),
        })?;
        out.push(Segment::Ref { raw, reference });
        offset += total;
        rest = &s[offset..];
    }
    if !rest.is_empty() {
        out.push(Segment::Text(rest));
    }
    Ok(out)
}

fn parse_reference(body: &str, is_action: bool, item: Option<&str>) -> Result<Reference, String> {
    let parts: Vec<&str> = body.split('.').collect();
    if parts.iter().any(|p| p.is_empty()) {
        return Err("empty path segment".into());
    }
    let head = parts[0].to_string();
    if !valid_key(&head) {
        return Err(format!("{head:?} is not a step, action or metadata name"));
    }
    let tail: Vec<String> = parts[1..].iter().map(|p| p.to_string()).collect();
    if let (false, Some(name)) = (is_action, item) {
        if head == name {
            return Ok(Reference::Item { path: tail });
        }
        if head == ITEM_INDEX {
            return match tail.is_empty() {
                true => Ok(Reference::ItemIndex),
                false => Err(format!("${{{ITEM_INDEX}}} is a number and has no fields")),
            };
        }
    }
    if !is_action && head == "metadata" {
        if tail.is_empty() {
            return Err("expected ${metadata.key}".into());
        }
        return Ok(Reference::Metadata { path: tail });
    }
    if !is_action && head == "context" {
        return Ok(Reference::Context { path: tail });
    }
    let path = match tail.split_first() {
        None => vec![],
        Some((first, rest)) if first == "output" => rest.to_vec(),
        Some(_) => {
            let (open, close) = if is_action { ("{{", "}}") } else { ("${", "}") };
            return Err(format!(
                "{open}{body}{close} is not a placeholder form (write {open}{}{close})",
                leading_form(&head, &tail)
            ));
        }
    };
    Ok(if is_action {
        Reference::Action { id: head, path }
    } else {
        Reference::Step { key: head, path }
    })
}

/// The form a mistaken placeholder body most likely meant, one that parses:
/// - `steps.s.output.x` or `steps.s.outputs.x` (GitHub Actions' habit) → `s.output.x`;
/// - `s.outputs.x`, `s.result.x` → `s.output.x` (`outputs`, `result` and `results` taken for
///   `output`), and any other `s.x` → `s.output.x`.
pub(super) fn leading_form(head: &str, tail: &[String]) -> String {
    let (head, tail) = match tail.split_first() {
        Some((step, rest))
            if matches!(head, "steps" | "step" | "needs" | "actions") && valid_key(step) =>
        {
            (step.as_str(), rest)
        }
        _ => (head, tail),
    };
    let rest = match tail.split_first() {
        Some((first, rest))
            if matches!(first.as_str(), "output" | "outputs" | "result" | "results") =>
        {
            rest
        }
        _ => tail,
    };
    let mut form = format!("{head}.output");
    for p in rest {
        form.push('.');
        form.push_str(p);
    }
    if rest.is_empty() && tail.is_empty() {
        form = head.to_string();
    }
    form
}

pub(super) fn valid_key(k: &str) -> bool {
    !k.is_empty()
        && k.len() <= 64
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// Every placeholder found in the strings of a JSON value.
pub fn references(value: &Value) -> Result<Vec<Reference>, PlanError> {
    references_in(value, None)
}

/// [`references`] in a map step's parameters (items read as `item`).
pub fn references_in(value: &Value, item: Option<&str>) -> Result<Vec<Reference>, PlanError> {
    let mut out = Vec::new();
    collect_refs(value, item, &mut out)?;
    Ok(out)
}

fn collect_refs(
    value: &Value,
    item: Option<&str>,
    out: &mut Vec<Reference>,
) -> Result<(), PlanError> {
    match value {
        Value::String(s) => {
            for seg in parse_template_in(s, item)? {
                if let Segment::Ref { reference, .. } = seg {
                    out.push(reference);
                }
            }
        }
        Value::Array(items) => {
            for v in items {
                collect_refs(v, item, out)?;
            }
        }
        Value::Object(map) => {
            for v in map.values() {
                collect_refs(v, item, out)?;
            }
        }
        _ => {}
    }
    Ok(())
}

/// The parameters whose placeholders are resolved for a call of `tool`: all of them, but the
/// `plan` of the built-in `task`, whose placeholders are the child's to resolve (it is sent
/// as written).
pub fn resolvable<'a>(tool: &str, parameters: &'a Value) -> std::borrow::Cow<'a, Value> {
    match parameters {
        Value::Object(m) if tool == super::wait::TASK_TOOL && m.contains_key("plan") => {
            let mut m = m.clone();
            m.remove("plan");
            std::borrow::Cow::Owned(Value::Object(m))
        }
        _ => std::borrow::Cow::Borrowed(parameters),
    }
}

pub(super) fn resolvable_plan<'a>(tool: &str, value: &'a Value) -> Option<&'a Value> {
    (tool == super::wait::TASK_TOOL)
        .then(|| value.get("plan"))
        .flatten()
}
