//! Workflow templates: parameterized plans. A template's plan may use `${input.key}` (or
//! `${input.key.sub}`) in any string; a task submitted with the template's id and an input gets
//! the plan with those placeholders replaced. A string that is exactly one placeholder takes the
//! input value as it is (a number stays a number); a placeholder inside a longer string is
//! replaced by the value's text. Other placeholders (`${step_1.output.x}`, `${metadata.k}`, …)
//! are left for the worker to resolve when the step runs.

use std::collections::BTreeSet;

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::Value;

/// A `templates` row.
#[derive(Debug, Clone, Serialize, sqlx::FromRow, utoipa::ToSchema)]
#[schema(as = Template)]
pub struct TemplateDef {
    pub id: String,
    pub description: String,
    #[schema(value_type = Object)]
    pub input_schema: Value,
    #[schema(value_type = Object)]
    pub plan: Value,
    /// The concurrency key of the tasks made from it (`${input.…}` / `${metadata.…}`
    /// placeholders, filled at each submit); a submit's own key wins.
    #[sqlx(default)]
    pub concurrency_key: Option<String>,
    /// The `max_cost` of the tasks made from it (a submit's own `limits.max_cost` wins).
    #[sqlx(default)]
    pub max_cost: Option<f64>,
    pub created_at: DateTime<Utc>,
    /// The tenant whose submits may name it.
    #[sqlx(default)]
    pub tenant: String,
}

const OPEN: &str = "${input.";

/// Every `${input.…}` placeholder in `plan`'s strings, as its path (`key` or `key.sub`).
pub fn input_paths(plan: &Value) -> Result<BTreeSet<String>, String> {
    let mut out = BTreeSet::new();
    walk(plan, &mut |s| {
        for path in paths_in(s)? {
            out.insert(path.to_string());
        }
        Ok(())
    })?;
    Ok(out)
}

/// The placeholders' paths in one string, in order.
fn paths_in(s: &str) -> Result<Vec<&str>, String> {
    paths_after(s, OPEN)
}

/// The paths of the placeholders that start with `open` (`${input.`) in one string, in order.
fn paths_after<'a>(s: &'a str, open: &str) -> Result<Vec<&'a str>, String> {
    let mut out = Vec::new();
    let mut rest = s;
    while let Some(at) = rest.find(open) {
        let after = &rest[at + open.len()..];
        let end = after
            .find('}')
            .ok_or_else(|| format!("unclosed placeholder in {s:?}"))?;
        let path = &after[..end];
        let ok = !path.is_empty()
            && path.split('.').all(|p| {
                !p.is_empty()
                    && p.chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
            });
        if !ok {
            return Err(format!("malformed placeholder {open}{path}}} in {s:?}"));
        }
        out.push(path);
        rest = &after[end + 1..];
    }
    Ok(out)
}

fn walk(v: &Value, f: &mut impl FnMut(&str) -> Result<(), String>) -> Result<(), String> {
    match v {
        Value::String(s) => f(s),
        Value::Array(a) => a.iter().try_for_each(|x| walk(x, f)),
        Value::Object(m) => m.values().try_for_each(|x| walk(x, f)),
        _ => Ok(()),
    }
}

fn lookup<'a>(input: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.').try_fold(input, |v, k| v.get(k))
}

/// `plan` with every `${input.…}` replaced from `input`; a path the input lacks is an error
/// naming it.
pub fn instantiate(plan: &Value, input: &Value) -> Result<Value, String> {
    Ok(match plan {
        Value::String(s) => {
            let paths = paths_in(s)?;
            if paths.is_empty() {
                return Ok(plan.clone());
            }
            let value = |p: &str| {
                lookup(input, p).ok_or_else(|| format!("input has no value for ${{input.{p}}}"))
            };
            if paths.len() == 1 && s == &format!("{OPEN}{}}}", paths[0]) {
                return value(paths[0]).cloned();
            }
            let mut out = s.clone();
            for p in paths {
                let v = value(p)?;
                let text = match v {
                    Value::String(t) => t.clone(),
                    other => other.to_string(),
                };
                out = out.replacen(&format!("{OPEN}{p}}}"), &text, 1);
            }
            Value::String(out)
        }
        Value::Array(a) => Value::Array(
            a.iter()
                .map(|x| instantiate(x, input))
                .collect::<Result<_, _>>()?,
        ),
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, x)| Ok((k.clone(), instantiate(x, input)?)))
                .collect::<Result<_, String>>()?,
        ),
        other => other.clone(),
    })
}

const METADATA: &str = "${metadata.";

/// A template's `concurrency_key`: the `${input.…}` paths it reads (to be declared), or what
/// is wrong with it. Only `${input.…}` and `${metadata.…}` placeholders may appear.
pub fn key_paths(pattern: &str) -> Result<Vec<String>, String> {
    let input = paths_after(pattern, OPEN)?;
    let metadata = paths_after(pattern, METADATA)?;
    let mut rest = pattern.to_string();
    for p in &input {
        rest = rest.replacen(&format!("{OPEN}{p}}}"), "", 1);
    }
    for p in &metadata {
        rest = rest.replacen(&format!("{METADATA}{p}}}"), "", 1);
    }
    if rest.contains("${") {
        return Err(format!(
            "concurrency_key {pattern:?}: only ${{input.key}} and ${{metadata.key}} placeholders may appear"
        ));
    }
    Ok(input.into_iter().map(str::to_string).collect())
}

/// A template's `concurrency_key` for one submit: its placeholders filled from `input` and
/// `metadata` (strings as they are, other values as JSON); a key of 1 to 128 characters.
pub fn concurrency_key(pattern: &str, input: &Value, metadata: &Value) -> Result<String, String> {
    let fill = |s: &str, open: &str, root: &Value, name: &str| -> Result<String, String> {
        let mut out = s.to_string();
        for p in paths_after(s, open)? {
            let v = lookup(root, p)
                .ok_or_else(|| format!("concurrency_key: {name} has no value for {open}{p}}}"))?;
            let text = match v {
                Value::String(t) => t.clone(),
                other => other.to_string(),
            };
            out = out.replacen(&format!("{open}{p}}}"), &text, 1);
        }
        Ok(out)
    };
    let with_input = fill(pattern, OPEN, input, "input")?;
    let key = fill(&with_input, METADATA, metadata, "metadata")?;
    if !(1..=128).contains(&key.chars().count()) {
        return Err(format!(
            "concurrency_key: {pattern:?} filled is {} characters; a key is 1 to 128",
            key.chars().count()
        ));
    }
    Ok(key)
}

/// An input with a stand-in value (`"x"`) at every placeholder path, to check a template's plan
/// shape when it is registered.
pub fn probe_input(paths: &BTreeSet<String>) -> Value {
    let mut root = Value::Object(Default::default());
    for p in paths {
        let mut at = &mut root;
        let parts: Vec<&str> = p.split('.').collect();
        for (i, k) in parts.iter().enumerate() {
            let last = i + 1 == parts.len();
            let m = match at {
                Value::Object(m) => m,
                // a path that is also a prefix of another (`a` and `a.b`): keep the object
                _ => break,
            };
            at = m.entry(k.to_string()).or_insert_with(|| {
                if last {
                    Value::String("x".into())
                } else {
                    Value::Object(Default::default())
                }
            });
        }
    }
    root
}

/// Placeholder paths whose first key `input_schema` does not declare (when it declares
/// `properties` at all).
pub fn undeclared(paths: &BTreeSet<String>, input_schema: &Value) -> Vec<String> {
    let Some(props) = input_schema.get("properties").and_then(Value::as_object) else {
        return vec![];
    };
    paths
        .iter()
        .filter(|p| !props.contains_key(p.split('.').next().unwrap_or_default()))
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn whole_placeholders_keep_their_type_and_embedded_ones_become_text() {
        let plan = json!({"steps": [{"id": "s", "tool": "t", "parameters": {
            "n": "${input.n}", "url": "https://x/${input.who.name}?n=${input.n}",
            "later": "${s0.output.v}", "list": ["${input.flag}"]}}]});
        let input = json!({"n": 3, "who": {"name": "ada"}, "flag": true});
        let out = instantiate(&plan, &input).unwrap();
        assert_eq!(
            out["steps"][0]["parameters"],
            json!({"n": 3, "url": "https://x/ada?n=3", "later": "${s0.output.v}", "list": [true]})
        );
        let paths: Vec<String> = input_paths(&plan).unwrap().into_iter().collect();
        assert_eq!(paths, ["flag", "n", "who.name"]);
    }

    #[test]
    fn a_missing_or_malformed_placeholder_is_named() {
        let plan = json!({"p": "${input.missing}"});
        assert!(
            instantiate(&plan, &json!({}))
                .unwrap_err()
                .contains("missing")
        );
        assert!(
            input_paths(&json!("${input.}"))
                .unwrap_err()
                .contains("malformed")
        );
        assert!(
            input_paths(&json!("${input.a"))
                .unwrap_err()
                .contains("unclosed")
        );
        assert!(
            input_paths(&json!("${input.a b}"))
                .unwrap_err()
                .contains("malformed")
        );
    }

    #[test]
    fn the_probe_input_fills_every_path_and_undeclared_keys_are_found() {
        let paths: BTreeSet<String> = ["a", "b.c", "b.d"].map(String::from).into();
        let probe = probe_input(&paths);
        assert_eq!(probe, json!({"a": "x", "b": {"c": "x", "d": "x"}}));
        let plan = json!(["${input.a}", "${input.b.c}", "${input.b.d}"]);
        assert_eq!(instantiate(&plan, &probe).unwrap(), json!(["x", "x", "x"]));
        let schema = json!({"type": "object", "properties": {"a": {}}});
        assert_eq!(undeclared(&paths, &schema), ["b.c", "b.d"]);
        assert!(undeclared(&paths, &json!({"type": "object"})).is_empty());
    }

    #[test]
    fn a_key_is_filled_from_the_input_and_the_metadata() {
        let input = json!({"customer": {"tier": "premium"}, "n": 7});
        let metadata = json!({"customer_id": "c-42"});
        assert_eq!(
            concurrency_key("${metadata.customer_id}", &input, &metadata).unwrap(),
            "c-42"
        );
        assert_eq!(
            concurrency_key(
                "${input.customer.tier}/${metadata.customer_id}/${input.n}",
                &input,
                &metadata
            )
            .unwrap(),
            "premium/c-42/7"
        );
        assert_eq!(
            concurrency_key("fixed", &input, &metadata).unwrap(),
            "fixed"
        );
        let missing = concurrency_key("${metadata.team}", &input, &metadata).unwrap_err();
        assert!(missing.contains("${metadata.team}"), "{missing}");
        assert_eq!(key_paths("${input.a.b}-${metadata.c}").unwrap(), ["a.b"]);
        let bad = key_paths("${context.x}").unwrap_err();
        assert!(
            bad.contains("only ${input.key} and ${metadata.key}"),
            "{bad}"
        );
        assert!(key_paths("${input.}").is_err());
        let long = concurrency_key("${input.x}", &json!({"x": "k".repeat(129)}), &metadata);
        assert!(long.unwrap_err().contains("1 to 128"));
    }
}
