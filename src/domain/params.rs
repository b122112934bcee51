//! Parameter resolution at run time (pure): placeholders are replaced by earlier outputs or
//! metadata, and parameters the tool's input schema declares but the step lacks are filled from
//! metadata. A string that is exactly one placeholder takes the referenced JSON value as is;
//! otherwise values are interpolated as text.

use std::collections::HashMap;

use serde_json::{Map, Value};

pub use super::placeholder::resolvable;
use super::placeholder::{Reference, Segment, parse_template_in, resolvable_plan};

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ResolveError(pub String);

/// What placeholders may read.
#[derive(Debug)]
pub struct Scope<'a> {
    /// Outputs of finished steps of the task, by step key.
    pub steps: &'a HashMap<String, Value>,
    /// Runtime metadata overlaid on task metadata.
    pub metadata: &'a Map<String, Value>,
    /// The task's `context`.
    pub context: &'a Value,
    /// Outputs of this step's actions (only while resolving the step's own parameters).
    pub actions: Option<&'a HashMap<String, Value>>,
    /// The item a map's item step runs with.
    pub item: Option<Item<'a>>,
}

/// A map item as its step's placeholders read it.
#[derive(Debug, Clone, Copy)]
pub struct Item<'a> {
    /// The map's `as` name (`item` by default).
    pub name: &'a str,
    pub value: &'a Value,
    pub index: &'a Value,
}

/// [`resolve`] for a call of `tool`: a `task`'s `plan` is kept as written.
pub fn resolve_call(tool: &str, value: &Value, scope: &Scope<'_>) -> Result<Value, ResolveError> {
    let mut out = resolve(&resolvable(tool, value), scope)?;
    if let (Some(plan), Value::Object(m)) = (resolvable_plan(tool, value), &mut out) {
        m.insert("plan".into(), plan.clone());
    }
    Ok(out)
}

pub fn resolve(value: &Value, scope: &Scope<'_>) -> Result<Value, ResolveError> {
    Ok(match value {
        Value::String(s) => resolve_string(s, scope)?,
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|v| resolve(v, scope))
                .collect::<Result<_, _>>()?,
        ),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| Ok((k.clone(), resolve(v, scope)?)))
                .collect::<Result<_, ResolveError>>()?,
        ),
        other => other.clone(),
    })
}

fn resolve_string(s: &str, scope: &Scope<'_>) -> Result<Value, ResolveError> {
    let segments =
        parse_template_in(s, scope.item.map(|i| i.name)).map_err(|e| ResolveError(e.message))?;
    if let [Segment::Ref { reference, raw }] = segments.as_slice() {
        return lookup(reference, raw, scope).cloned();
    }
    let mut out = String::with_capacity(s.len());
    for seg in &segments {
        match seg {
            Segment::Text(t) => out.push_str(t),
            Segment::Ref { reference, raw } => match lookup(reference, raw, scope)? {
                Value::String(v) => out.push_str(v),
                other => out.push_str(&other.to_string()),
            },
        }
    }
    Ok(Value::String(out))
}

fn lookup<'a>(
    reference: &Reference,
    raw: &str,
    scope: &'a Scope<'_>,
) -> Result<&'a Value, ResolveError> {
    let (root, path): (&Value, &[String]) = match reference {
        Reference::Step { key, path } => (
            scope
                .steps
                .get(key)
                .ok_or_else(|| ResolveError(format!("{raw}: step {key:?} has no output")))?,
            path,
        ),
        Reference::Action { id, path } => (
            scope
                .actions
                .and_then(|a| a.get(id))
                .ok_or_else(|| ResolveError(format!("{raw}: action {id:?} has no output")))?,
            path,
        ),
        Reference::Context { path } => (scope.context, path.as_slice()),
        Reference::Item { path } => (
            scope
                .item
                .ok_or_else(|| ResolveError(format!("{raw}: this step is not a map's item")))?
                .value,
            path.as_slice(),
        ),
        Reference::ItemIndex => (
            scope
                .item
                .ok_or_else(|| ResolveError(format!("{raw}: this step is not a map's item")))?
                .index,
            &[][..],
        ),
        Reference::Metadata { path } => {
            let (first, rest) = path.split_first().expect("parser guarantees a key");
            (
                scope
                    .metadata
                    .get(first)
                    .ok_or_else(|| ResolveError(format!("{raw}: metadata has no key {first:?}")))?,
                rest,
            )
        }
    };
    walk(root, path).ok_or_else(|| {
        let place = match reference {
            Reference::Context { .. } => "the task's context",
            Reference::Metadata { .. } => "the metadata",
            Reference::Item { .. } | Reference::ItemIndex => "the item",
            _ => "the output",
        };
        ResolveError(format!("{raw}: path not found in {place}"))
    })
}

/// Follow a dotted path through objects (by key) and arrays (by index).
pub fn walk<'a>(mut v: &'a Value, path: &[String]) -> Option<&'a Value> {
    for seg in path {
        v = match v {
            Value::Object(m) => m.get(seg)?,
            Value::Array(a) => a.get(seg.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(v)
}

/// Fill parameters the tool's input schema declares (`properties`) but the step does not set,
/// from metadata keys of the same name.
pub fn fill_from_metadata(params: &mut Value, input_schema: &Value, metadata: &Map<String, Value>) {
    let (Some(obj), Some(props)) = (
        params.as_object_mut(),
        input_schema.get("properties").and_then(Value::as_object),
    ) else {
        return;
    };
    for name in props.keys() {
        if !obj.contains_key(name)
            && let Some(v) = metadata.get(name)
        {
            obj.insert(name.clone(), v.clone());
        }
    }
}

/// Shallow-merge `overrides` into `params` (recovery's adjusted parameters win).
pub fn merge_overrides(params: &mut Value, overrides: &Value) {
    if let (Some(p), Some(o)) = (params.as_object_mut(), overrides.as_object()) {
        for (k, v) in o {
            p.insert(k.clone(), v.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn whole_placeholders_keep_json_types_and_text_is_interpolated() {
        let steps: HashMap<String, Value> = [
            ("s1".to_string(), json!({"n": 3, "items": [{"name": "x"}]})),
            ("s2".to_string(), json!("plain")),
        ]
        .into();
        let metadata: Map<String, Value> = json!({"token": "abc", "num": 7})
            .as_object()
            .unwrap()
            .clone();
        let actions: HashMap<String, Value> = [("a1".to_string(), json!({"v": true}))].into();
        let context = json!({"customer": {"tier": "gold", "ids": [4, 5]}});
        let scope = Scope {
            steps: &steps,
            metadata: &metadata,
            context: &context,
            actions: Some(&actions),
            item: None,
        };
        let params = json!({
            "whole": "${s1}",
            "same": "${s1.output}",
            "n": "${s1.output.n}",
            "name": "${s1.output.items.0.name}",
            "text": "n=${s1.output.n}, s=${s2}, tok=${metadata.token}, obj=${s1.output.items.0}",
            "meta": "${metadata.num}",
            "act": "{{a1.output.v}}",
            "nested": ["${s2}", {"deep": "${metadata.token}"}],
            "tier": "${context.customer.tier}",
            "second_id": "${context.customer.ids.1}",
            "all_context": "${context}",
            "said": "tier ${context.customer.tier}",
            "untouched": 5
        });
        let out = resolve(&params, &scope).unwrap();
        assert_eq!(out["whole"], json!({"n": 3, "items": [{"name": "x"}]}));
        assert_eq!(out["same"], out["whole"]);
        assert_eq!(out["n"], json!(3));
        assert_eq!(out["name"], json!("x"));
        assert_eq!(
            out["text"],
            json!("n=3, s=plain, tok=abc, obj={\"name\":\"x\"}")
        );
        assert_eq!(out["meta"], json!(7));
        assert_eq!(out["act"], json!(true));
        assert_eq!(out["nested"], json!(["plain", {"deep": "abc"}]));
        assert_eq!(out["tier"], json!("gold"));
        assert_eq!(out["second_id"], json!(5));
        assert_eq!(out["all_context"], context);
        assert_eq!(out["said"], json!("tier gold"));
        assert_eq!(out["untouched"], json!(5));
    }

    #[test]
    fn missing_references_are_errors() {
        let steps = HashMap::new();
        let metadata = Map::new();
        let context = json!({});
        let scope = Scope {
            steps: &steps,
            metadata: &metadata,
            context: &context,
            actions: None,
            item: None,
        };
        assert!(
            resolve(&json!("${s1}"), &scope)
                .unwrap_err()
                .0
                .contains("no output")
        );
        assert!(
            resolve(&json!("x ${metadata.k}"), &scope)
                .unwrap_err()
                .0
                .contains("no key")
        );
        assert!(resolve(&json!("{{a.output}}"), &scope).is_err());
        assert!(
            resolve(&json!("${context.missing}"), &scope)
                .unwrap_err()
                .0
                .contains("context")
        );
    }

    #[test]
    fn an_item_step_reads_its_item_and_index_under_the_maps_name() {
        let steps: HashMap<String, Value> = [("a".to_string(), json!({"k": 1}))].into();
        let (metadata, context) = (Map::new(), json!({}));
        let (value, index) = (json!({"title": "T", "tags": ["x", "y"]}), json!(4));
        let scope = |name| Scope {
            steps: &steps,
            metadata: &metadata,
            context: &context,
            actions: None,
            item: Some(Item {
                name,
                value: &value,
                index: &index,
            }),
        };
        let out = resolve(
            &json!({"all": "${doc}", "title": "${doc.title}", "tag": "${doc.tags.1}",
                    "i": "${item_index}", "said": "#${item_index}: ${doc.title}", "a": "${a.output.k}"}),
            &scope("doc"),
        )
        .unwrap();
        assert_eq!(
            out,
            json!({"all": value, "title": "T", "tag": "y", "i": 4, "said": "#4: T", "a": 1})
        );
        // a path the item lacks, and `${item}` when the map calls it something else
        let e = resolve(&json!("${doc.nope}"), &scope("doc")).unwrap_err().0;
        assert!(e.contains("path not found in the item"), "{e}");
        let e = resolve(&json!("${item}"), &scope("doc")).unwrap_err().0;
        assert!(e.contains("has no output"), "{e}");
        // a step that is not an item reads no item
        let plain = Scope {
            item: None,
            ..scope("doc")
        };
        assert!(resolve(&json!("${doc}"), &plain).is_err());
    }

    #[test]
    fn fills_declared_parameters_from_metadata_only_when_missing() {
        let mut params = json!({"a": 1});
        let schema = json!({"properties": {"a": {}, "b": {}, "c": {}}});
        let md = json!({"a": 9, "b": 2}).as_object().unwrap().clone();
        fill_from_metadata(&mut params, &schema, &md);
        assert_eq!(params, json!({"a": 1, "b": 2}));
    }
}
