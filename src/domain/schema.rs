//! JSON Schema checks, by the `jsonschema` crate: a tool's resolved parameters against its
//! `input_schema` before the call, its output against an optional `output_schema`, and the LLM
//! brain's answers against the schema each decision asks for. Pure: no remote references are
//! ever fetched (the crate's resolvers are compiled out).

use std::sync::Arc;

use serde_json::Value;

/// At most this many violations are reported for one value.
pub const MAX_VIOLATIONS: usize = 8;

/// A schema that does not compile.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a valid JSON Schema: {0}")]
pub struct InvalidSchema(pub String);

/// A compiled schema, cheap to clone and to share between tasks.
#[derive(Clone)]
pub struct Schema {
    /// None: the schema accepts every value (`{}`, `true`).
    validator: Option<Arc<jsonschema::Validator>>,
}

impl std::fmt::Debug for Schema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Schema")
            .field("accepts_anything", &self.validator.is_none())
            .finish()
    }
}

impl PartialEq for Schema {
    /// Compiled schemas compare by identity (their source is compared where they come from).
    fn eq(&self, other: &Self) -> bool {
        match (&self.validator, &other.validator) {
            (None, None) => true,
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }
}

impl Default for Schema {
    fn default() -> Self {
        Self::anything()
    }
}

impl Schema {
    /// The schema that accepts every value.
    pub fn anything() -> Self {
        Self { validator: None }
    }

    /// Compile `schema`; an empty object or `true` accepts everything and costs nothing to check.
    pub fn compile(schema: &Value) -> Result<Self, InvalidSchema> {
        let trivial = match schema {
            Value::Bool(true) => true,
            Value::Object(m) => m.is_empty(),
            _ => false,
        };
        if trivial {
            return Ok(Self::anything());
        }
        jsonschema::validator_for(schema)
            .map(|v| Self {
                validator: Some(Arc::new(v)),
            })
            .map_err(|e| InvalidSchema(e.to_string()))
    }

    /// What is wrong with `v`, one line per violation (`at /a/0: …`), at most
    /// [`MAX_VIOLATIONS`]; empty when `v` conforms.
    pub fn violations(&self, v: &Value) -> Vec<String> {
        let Some(validator) = &self.validator else {
            return vec![];
        };
        validator
            .iter_errors(v)
            .take(MAX_VIOLATIONS)
            .map(|e| {
                let at = e.instance_path().to_string();
                // a message quotes the value: never one under a credential-like key
                if at.split('/').any(super::secrets::is_secret_key) {
                    format!("at {at}: does not match the schema (value not shown)")
                } else if at.is_empty() {
                    e.to_string()
                } else {
                    format!("at {at}: {e}")
                }
            })
            .collect()
    }
}

/// Check that `schema` compiles (what `POST /tools` and templates accept).
pub fn check(schema: &Value) -> Result<(), InvalidSchema> {
    Schema::compile(schema).map(drop)
}

/// Violations of `v` against `schema` in one go (compiles each call; for schemas used once).
/// A schema that does not compile is reported as the only violation.
pub fn violations(schema: &Value, v: &Value) -> Vec<String> {
    match Schema::compile(schema) {
        Ok(s) => s.violations(v),
        Err(e) => vec![e.to_string()],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reports_each_violation_with_its_place() {
        let s = Schema::compile(&json!({
            "type": "object",
            "properties": {
                "ms": {"type": "integer", "minimum": 0},
                "tags": {"type": "array", "items": {"type": "string"}},
                "mode": {"enum": ["a", "b"]}
            },
            "required": ["ms"],
            "additionalProperties": false
        }))
        .unwrap();
        assert!(
            s.violations(&json!({"ms": 5, "tags": ["x"], "mode": "a"}))
                .is_empty()
        );
        let v = s.violations(&json!({"ms": -1, "tags": ["x", 3], "mode": "c", "extra": 1}));
        assert_eq!(v.len(), 4, "{v:?}");
        assert!(v.iter().any(|l| l.starts_with("at /ms:")), "{v:?}");
        assert!(v.iter().any(|l| l.starts_with("at /tags/1:")), "{v:?}");
        assert!(v.iter().any(|l| l.starts_with("at /mode:")), "{v:?}");
        assert!(v.iter().any(|l| l.contains("extra")), "{v:?}");
        let missing = s.violations(&json!({}));
        assert_eq!(missing.len(), 1);
        assert!(missing[0].contains("ms"), "{missing:?}");
        assert_eq!(s.violations(&json!("text")).len(), 1);
    }

    #[test]
    fn features_beyond_a_subset_work() {
        // oneOf, pattern, $ref to a local definition, formats stay annotations
        let s = Schema::compile(&json!({
            "$defs": {"id": {"type": "string", "pattern": "^[a-z]+-[0-9]+$"}},
            "oneOf": [
                {"type": "object", "properties": {"id": {"$ref": "#/$defs/id"}}, "required": ["id"]},
                {"type": "null"}
            ]
        }))
        .unwrap();
        assert!(s.violations(&json!({"id": "abc-12"})).is_empty());
        assert!(s.violations(&Value::Null).is_empty());
        assert!(!s.violations(&json!({"id": "ABC"})).is_empty());
    }

    #[test]
    fn trivial_and_invalid_schemas() {
        assert!(
            Schema::compile(&json!({}))
                .unwrap()
                .violations(&json!(5))
                .is_empty()
        );
        assert!(
            Schema::compile(&json!(true))
                .unwrap()
                .violations(&json!(5))
                .is_empty()
        );
        assert!(check(&json!({"type": "nonsense"})).is_err());
        assert!(check(&json!({"minimum": "zero"})).is_err());
        assert_eq!(violations(&json!({"type": 7}), &json!(1)).len(), 1);
    }

    #[test]
    fn credentials_are_not_quoted() {
        let s = Schema::compile(&json!({"properties": {"headers": {"properties": {
            "Authorization": {"type": "integer"}}}}}))
        .unwrap();
        let v = s.violations(&json!({"headers": {"Authorization": "Bearer sk-secret-1"}}));
        assert_eq!(v.len(), 1);
        assert!(!v[0].contains("sk-secret-1"), "{v:?}");
        assert!(v[0].contains("/headers/Authorization"), "{v:?}");
    }

    #[test]
    fn many_violations_are_capped() {
        let s = Schema::compile(&json!({"type": "array", "items": {"type": "string"}})).unwrap();
        let v = s.violations(&json!([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]));
        assert_eq!(v.len(), MAX_VIOLATIONS);
    }
}
