//! Schema-guided repair: when a step's resolved parameters break its tool's `input_schema`,
//! change what the schema makes unambiguous and nothing else.
//!
//! - a lossless coercion between string and number, integer or boolean (`"5"` → `5`,
//!   `7` → `"7"`, `"true"` → `true`), only when the value reads back exactly; a string in any
//!   of JSON's number forms is read exactly (`"5.0"`, `"5e0"`, `"0.5E1"` → `5` for an integer,
//!   `"2.50"` → `2.5` for a number), and `"TRUE"` / `"False"` are booleans;
//! - a whole number written as a float (`5.0`, `5e0` in the JSON) where the schema asks for an
//!   integer is written as the integer before any call ([`integers_as_integers`]): JSON Schema
//!   calls it an integer, a strict server does not;
//! - a missing required property whose schema gives a `default`, a `const`, or a single-valued
//!   `enum`;
//! - a scalar where an array is asked for becomes a one-item array.
//!
//! A coercion that would lose information (`"5.5"` or `5.5` as an integer, `"abc"` as a
//! number) refuses the whole repair, as does anything the schema still rejects afterwards:
//! a repaired call must validate before it is made. Pure.

use serde_json::{Map, Value};

use super::schema::Schema;

/// One change, as the reflection's analysis names it.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    /// JSON pointer of the changed value (`/count`, `/items/0`).
    pub path: String,
    /// The value before (None: it was missing).
    pub from: Option<Value>,
    pub to: Value,
    /// Why the schema makes this change unambiguous.
    pub why: &'static str,
}

impl std::fmt::Display for Change {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.from {
            Some(from) => write!(f, "{}: {from} → {} ({})", self.path, self.to, self.why),
            None => write!(f, "{}: missing → {} ({})", self.path, self.to, self.why),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// The repaired parameters validate; the top-level properties that changed are `changes`'
    /// first segments.
    Repaired { params: Value, changes: Vec<Change> },
    /// Nothing can be repaired without guessing: why.
    Refused { reasons: Vec<String> },
}

/// Repair `params` against `schema` (see the module's rules).
pub fn repair(schema: &Value, params: &Value) -> Outcome {
    let mut fixed = params.clone();
    let mut w = Walk::default();
    w.value(schema, &mut fixed, "");
    if !w.refused.is_empty() {
        return Outcome::Refused { reasons: w.refused };
    }
    let remaining = match Schema::compile(schema) {
        Ok(s) => s.violations(&fixed),
        Err(e) => vec![e.to_string()],
    };
    if !remaining.is_empty() {
        let mut reasons = vec!["the schema still rejects the parameters".to_string()];
        reasons.extend(remaining);
        return Outcome::Refused { reasons };
    }
    if w.changes.is_empty() {
        return Outcome::Refused {
            reasons: vec!["the parameters already match the schema".into()],
        };
    }
    Outcome::Repaired {
        params: fixed,
        changes: w.changes,
    }
}

/// Repair `params` from the violations a tool's own answer named (`at <pointer>: <message>`,
/// [`super::envelope::named_violations`]), when the tool has no schema that says more: each
/// named value becomes the type its message asks for ([`super::envelope::expected_type`]), by
/// the same lossless coercions. A violation that names no type, no value the call sent, a
/// value that already has that type, or a coercion that would lose something refuses the
/// whole repair.
pub fn repair_named(params: &Value, violations: &[String]) -> Outcome {
    let mut fixed = params.clone();
    let mut changes = Vec::new();
    let mut refused = Vec::new();
    for v in violations {
        let Some((at, msg)) = super::envelope::split_violation(v) else {
            refused.push(format!("{v:?} names no parameter"));
            continue;
        };
        let Some(ty) = super::envelope::expected_type(msg) else {
            refused.push(format!(
                "the tool's message for {at} names no type ({msg:?})"
            ));
            continue;
        };
        let Some(value) = fixed.pointer_mut(at) else {
            refused.push(format!("the call sent nothing at {at}"));
            continue;
        };
        if has_type(value, ty) {
            refused.push(format!("{at} is already a{} {ty}", article(ty)));
            continue;
        }
        match coerce(ty, value, None) {
            Coerced::To(to) => {
                changes.push(Change {
                    path: at.to_string(),
                    from: Some(value.clone()),
                    to: to.clone(),
                    why: "the tool asked for this type; lossless",
                });
                *value = to;
            }
            Coerced::Lossy(why) => refused.push(format!("{at}: {why}")),
            Coerced::None => refused.push(format!(
                "{at}: no lossless rule makes it a{} {ty}",
                article(ty)
            )),
        }
    }
    if !refused.is_empty() || changes.is_empty() {
        if refused.is_empty() {
            refused.push("the tool named no parameter".into());
        }
        return Outcome::Refused { reasons: refused };
    }
    Outcome::Repaired {
        params: fixed,
        changes,
    }
}

fn article(ty: &str) -> &'static str {
    if ty.starts_with(['a', 'e', 'i', 'o', 'u']) {
        "n"
    } else {
        ""
    }
}

/// The top-level parameters a repair changed, with their new values (what a retry merges
/// over the step's own parameters).
pub fn changed_top_level(params: &Value, changes: &[Change]) -> Map<String, Value> {
    let mut out = Map::new();
    for c in changes {
        let key = c
            .path
            .trim_start_matches('/')
            .split('/')
            .next()
            .unwrap_or("");
        let key = key.replace("~1", "/").replace("~0", "~");
        if let Some(v) = params.get(&key) {
            out.insert(key, v.clone());
        }
    }
    out
}

#[derive(Default)]
struct Walk {
    changes: Vec<Change>,
    refused: Vec<String>,
}

/// The single type a schema asks for (`"integer"`, or `["integer", "null"]` for a value that
/// is not null); None when it names none or several.
fn single_type(schema: &Value) -> Option<&str> {
    match schema.get("type")? {
        Value::String(t) => Some(t),
        Value::Array(ts) => {
            let mut named = ts.iter().filter_map(Value::as_str).filter(|t| *t != "null");
            let one = named.next()?;
            named.next().is_none().then_some(one)
        }
        _ => None,
    }
}

fn has_type(v: &Value, ty: &str) -> bool {
    match ty {
        "string" => v.is_string(),
        "number" => v.is_number(),
        "integer" => v.as_i64().is_some() || v.as_u64().is_some() || whole(v),
        "boolean" => v.is_boolean(),
        "array" => v.is_array(),
        "object" => v.is_object(),
        "null" => v.is_null(),
        _ => true,
    }
}

/// A float with no fractional part is an integer to JSON Schema.
fn whole(v: &Value) -> bool {
    v.as_f64()
        .is_some_and(|f| f.is_finite() && f.fract() == 0.0)
}

fn fits(schema: &Value, v: &Value) -> bool {
    match schema.get("type") {
        Some(Value::String(t)) => has_type(v, t),
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).any(|t| has_type(v, t)),
        _ => true,
    }
}

/// A string in JSON's number grammar, read exactly: `(negative, significant digits, exponent)`
/// with value `±digits × 10^exponent`, the digits without leading or trailing zeros (empty:
/// zero). None: not JSON's grammar (`"05"`, `" 5"`, `"+5"`, `"5."`, `"NaN"`).
fn json_decimal(s: &str) -> Option<(bool, String, i64)> {
    let (negative, rest) = match s.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s),
    };
    let (mantissa, exp) = match rest.find(['e', 'E']) {
        Some(i) => {
            let e = &rest[i + 1..];
            let digits = e.strip_prefix(['+', '-']).unwrap_or(e);
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            (&rest[..i], e.parse::<i64>().ok()?)
        }
        None => (rest, 0),
    };
    let (int, frac) = match mantissa.split_once('.') {
        Some((i, f)) if !f.is_empty() && f.bytes().all(|b| b.is_ascii_digit()) => (i, f),
        Some(_) => return None,
        None => (mantissa, ""),
    };
    let int_ok = int == "0"
        || (!int.is_empty() && !int.starts_with('0') && int.bytes().all(|b| b.is_ascii_digit()));
    if !int_ok {
        return None;
    }
    let all = format!("{int}{frac}");
    let mut exp = exp.checked_sub(frac.len() as i64)?;
    let trimmed = all.trim_start_matches('0');
    let digits = trimmed.trim_end_matches('0');
    exp = exp.checked_add((trimmed.len() - digits.len()) as i64)?;
    Some((negative && !digits.is_empty(), digits.to_string(), exp))
}

/// A string in any of JSON's number forms whose value is a whole number that fits an `i64` or
/// a `u64`, as that integer (`"5.0"`, `"5e0"`, `"50E-1"`).
fn json_integer(s: &str) -> Option<Value> {
    let (negative, digits, exp) = json_decimal(s)?;
    if digits.is_empty() {
        return Some(Value::from(0));
    }
    if !(0..=20).contains(&exp) {
        return None;
    }
    let written = format!(
        "{}{digits}{}",
        if negative { "-" } else { "" },
        "0".repeat(exp as usize)
    );
    written
        .parse::<i64>()
        .ok()
        .map(Value::from)
        .or_else(|| written.parse::<u64>().ok().map(Value::from))
}

/// A string in any of JSON's number forms, as the number it is exactly: an integer when whole,
/// else the float whose shortest form has the same value (`"2.50"` → `2.5`, `"1e-1"` → `0.1`).
fn json_number(s: &str) -> Option<Value> {
    if let Some(i) = json_integer(s) {
        return Some(i);
    }
    let exact = json_decimal(s)?;
    let n = serde_json::Number::from_f64(s.parse().ok()?)?;
    (json_decimal(&n.to_string()) == Some(exact)).then_some(Value::Number(n))
}

/// Write every whole number that is a float in the JSON (`5.0`, `5e0`) as the integer it is
/// where `schema` asks for an integer; returns whether anything changed. Lossless, and what a
/// strict server needs: JSON Schema accepts `5.0` as an integer, a typed server may not.
pub fn integers_as_integers(schema: &Value, v: &mut Value) -> bool {
    let Some(s) = schema.as_object() else {
        return false;
    };
    let mut changed = false;
    if single_type(schema) == Some("integer")
        && v.as_i64().is_none()
        && v.as_u64().is_none()
        && let Some(f) = v.as_f64().filter(|f| f.is_finite() && f.fract() == 0.0)
    {
        if f >= i64::MIN as f64 && f < i64::MAX as f64 {
            *v = Value::from(f as i64);
            return true;
        }
        if f >= 0.0 && f < u64::MAX as f64 {
            *v = Value::from(f as u64);
            return true;
        }
        return false;
    }
    match v {
        Value::Object(m) => {
            if let Some(props) = s.get("properties").and_then(Value::as_object) {
                for (name, ps) in props {
                    if let Some(x) = m.get_mut(name) {
                        changed |= integers_as_integers(ps, x);
                    }
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = s.get("items") {
                for item in items {
                    changed |= integers_as_integers(item_schema, item);
                }
            }
        }
        _ => {}
    }
    changed
}

enum Coerced {
    To(Value),
    /// The schema asks for this type, but the value cannot become it without losing something.
    Lossy(String),
    /// No rule applies.
    None,
}

fn coerce(ty: &str, v: &Value, items: Option<&Value>) -> Coerced {
    match (ty, v) {
        ("integer", Value::String(s)) => match json_integer(s) {
            Some(i) => Coerced::To(i),
            None => Coerced::Lossy(format!("{v} is not exactly an integer")),
        },
        ("integer", Value::Number(_)) => Coerced::Lossy(format!("{v} is not a whole number")),
        ("number", Value::String(s)) => match json_number(s) {
            Some(n) => Coerced::To(n),
            None => Coerced::Lossy(format!("{v} is not exactly a number")),
        },
        ("boolean", Value::String(s)) => match s.to_ascii_lowercase().as_str() {
            "true" => Coerced::To(Value::Bool(true)),
            "false" => Coerced::To(Value::Bool(false)),
            _ => Coerced::Lossy(format!("{v} is not \"true\" or \"false\"")),
        },
        ("string", Value::Number(n)) => Coerced::To(Value::String(n.to_string())),
        ("string", Value::Bool(b)) => Coerced::To(Value::String(b.to_string())),
        ("array", Value::String(_) | Value::Number(_) | Value::Bool(_)) => {
            let item = match items {
                Some(items) if !fits(items, v) => match single_type(items) {
                    Some(t) => match coerce(t, v, None) {
                        Coerced::To(x) => x,
                        other => return other,
                    },
                    None => return Coerced::None,
                },
                _ => v.clone(),
            };
            Coerced::To(Value::Array(vec![item]))
        }
        _ => Coerced::None,
    }
}

/// The value a missing required property can only have: its `default`, its `const`, or the
/// one value of its `enum`.
fn only_value(schema: &Value) -> Option<(Value, &'static str)> {
    if let Some(d) = schema.get("default") {
        return Some((d.clone(), "missing; the schema's default"));
    }
    if let Some(c) = schema.get("const") {
        return Some((c.clone(), "missing; the schema's const"));
    }
    match schema.get("enum").and_then(Value::as_array) {
        Some(one) if one.len() == 1 => Some((one[0].clone(), "missing; the schema's only value")),
        _ => None,
    }
}

impl Walk {
    fn value(&mut self, schema: &Value, v: &mut Value, path: &str) {
        if !schema.is_object() {
            return;
        }
        if !fits(schema, v)
            && let Some(ty) = single_type(schema)
        {
            match coerce(ty, v, schema.get("items")) {
                Coerced::To(to) => {
                    let why = if ty == "array" {
                        "a scalar where an array is asked for: one item"
                    } else {
                        "exact conversion to the schema's type"
                    };
                    self.changes.push(Change {
                        path: path.to_string(),
                        from: Some(v.clone()),
                        to: to.clone(),
                        why,
                    });
                    *v = to;
                }
                Coerced::Lossy(why) => {
                    let at = if path.is_empty() { "/" } else { path };
                    self.refused
                        .push(format!("{at}: {why}; a coercion would lose information"));
                    return;
                }
                Coerced::None => return,
            }
        }
        match v {
            Value::Object(m) => self.object(schema, m, path),
            Value::Array(items) => {
                if let Some(item_schema) = schema.get("items").filter(|s| s.is_object()) {
                    for (i, item) in items.iter_mut().enumerate() {
                        self.value(item_schema, item, &format!("{path}/{i}"));
                    }
                }
            }
            _ => {}
        }
    }

    fn object(&mut self, schema: &Value, m: &mut Map<String, Value>, path: &str) {
        let Some(props) = schema.get("properties").and_then(Value::as_object) else {
            return;
        };
        let required: Vec<&str> = schema
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        for (name, ps) in props {
            let p = format!("{path}/{}", name.replace('~', "~0").replace('/', "~1"));
            match m.get_mut(name) {
                Some(x) => self.value(ps, x, &p),
                None if required.contains(&name.as_str()) => {
                    if let Some((to, why)) = only_value(ps) {
                        self.changes.push(Change {
                            path: p,
                            from: None,
                            to: to.clone(),
                            why,
                        });
                        m.insert(name.clone(), to);
                    }
                }
                None => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "count": {"type": "integer"},
                "ratio": {"type": "number"},
                "label": {"type": "string"},
                "on": {"type": "boolean"},
                "mode": {"type": "string", "default": "fast"},
                "version": {"const": 2},
                "unit": {"enum": ["ms"]},
                "tags": {"type": "array", "items": {"type": "string"}},
                "ids": {"type": "array", "items": {"type": "integer"}},
                "nested": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
            },
            "required": ["count", "mode", "version", "unit"]
        })
    }

    fn repaired(params: Value) -> (Value, Vec<String>) {
        match repair(&schema(), &params) {
            Outcome::Repaired { params, changes } => {
                (params, changes.iter().map(|c| c.path.clone()).collect())
            }
            Outcome::Refused { reasons } => panic!("refused: {reasons:?}"),
        }
    }

    fn refused(params: Value) -> Vec<String> {
        match repair(&schema(), &params) {
            Outcome::Refused { reasons } => reasons,
            other => panic!("repaired: {other:?}"),
        }
    }

    #[test]
    fn lossless_coercions_and_the_values_the_schema_fixes() {
        let (p, changed) = repaired(json!({
            "count": "5", "ratio": "0.25", "label": 7, "on": "true",
            "tags": "a", "ids": "3", "nested": {"n": "-4"}
        }));
        assert_eq!(
            p,
            json!({"count": 5, "ratio": 0.25, "label": "7", "on": true, "mode": "fast",
                   "version": 2, "unit": "ms", "tags": ["a"], "ids": [3], "nested": {"n": -4}})
        );
        for path in [
            "/count",
            "/ratio",
            "/label",
            "/on",
            "/mode",
            "/version",
            "/unit",
            "/tags",
            "/ids",
            "/nested/n",
        ] {
            assert!(changed.iter().any(|c| c == path), "{path} in {changed:?}");
        }
        let top = changed_top_level(&p, &[]);
        assert!(top.is_empty());
    }

    #[test]
    fn only_what_changed_is_merged_back() {
        let params = json!({"count": "5", "mode": "slow", "version": 2, "unit": "ms"});
        let Outcome::Repaired { params, changes } = repair(&schema(), &params) else {
            panic!()
        };
        assert_eq!(changes.len(), 1);
        assert_eq!(
            changes[0].to_string(),
            "/count: \"5\" → 5 (exact conversion to the schema's type)"
        );
        let top = changed_top_level(&params, &changes);
        assert_eq!(Value::Object(top), json!({"count": 5}));
    }

    #[test]
    fn lossy_coercions_are_refused() {
        let base = || json!({"mode": "m", "version": 2, "unit": "ms"});
        for (key, bad) in [
            ("count", json!("5.5")),
            ("count", json!(5.5)),
            ("count", json!("05")),
            ("count", json!(" 5")),
            ("ratio", json!("abc")),
            ("count", json!("5.5e0")),
            ("count", json!("1e400")),
            ("ratio", json!("0.1000000000000000000001")),
            ("on", json!("yes")),
            ("ids", json!("x")),
        ] {
            let mut p = base();
            p["count"] = json!(1);
            p[key] = bad.clone();
            let why = refused(p);
            assert!(
                why.iter().any(|w| w.contains("lose information")),
                "{key}={bad}: {why:?}"
            );
        }
    }

    #[test]
    fn what_the_schema_does_not_settle_is_refused() {
        // a required property with no default: nothing to fill it with
        let s =
            json!({"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]});
        let Outcome::Refused { reasons } = repair(&s, &json!({})) else {
            panic!()
        };
        assert!(reasons[0].contains("still rejects"), "{reasons:?}");
        // valid already: nothing to repair
        let Outcome::Refused { reasons } = repair(&s, &json!({"q": "x"})) else {
            panic!()
        };
        assert!(reasons[0].contains("already match"));
        // a value beside its single-valued enum is not replaced (that would change what was asked)
        let Outcome::Refused { .. } = repair(
            &schema(),
            &json!({"count": 1, "mode": "m", "version": 3, "unit": "ms"}),
        ) else {
            panic!()
        };
    }

    #[test]
    fn exact_numbers() {
        assert_eq!(json_integer("0"), Some(json!(0)));
        assert_eq!(json_integer("-0"), Some(json!(0)));
        assert_eq!(json_integer("18446744073709551615"), Some(json!(u64::MAX)));
        assert_eq!(json_integer("18446744073709551616"), None);
        assert_eq!(json_number("2.5"), Some(json!(2.5)));
        assert_eq!(json_number("NaN"), None);
        assert_eq!(json_number("inf"), None);
        // every form of JSON's number grammar, read exactly (the recovery issue's second part:
        // `"2.50"` was refused before it)
        for (s, n) in [
            ("5.0", json!(5)),
            ("5e0", json!(5)),
            ("5E+0", json!(5)),
            ("0.5e1", json!(5)),
            ("50e-1", json!(5)),
            ("-1.20e2", json!(-120)),
            ("0e5", json!(0)),
            ("1e19", json!(10_000_000_000_000_000_000u64)),
        ] {
            assert_eq!(json_integer(s), Some(n.clone()), "{s}");
            assert_eq!(json_number(s), Some(n), "{s}");
        }
        for (s, n) in [("2.50", 2.5), ("1e-1", 0.1), ("-2.5E-3", -0.0025)] {
            assert_eq!(json_integer(s), None, "{s}");
            assert_eq!(json_number(s), Some(json!(n)), "{s}");
        }
        for s in [
            "5.5", "0.5", "1e400", "1e-400", "1e20", "05", " 5", "+5", "5.", ".5", "5e", "5e+",
            "0x10", "1_000", "", "-",
        ] {
            assert_eq!(json_integer(s), None, "{s}");
        }
        for s in ["0.1000000000000000000001", "1e400", "05", "5.", "abc"] {
            assert_eq!(json_number(s), None, "{s}");
        }
    }

    #[test]
    fn whole_floats_are_written_as_integers_where_the_schema_asks() {
        let schema = schema();
        let mut p = json!({"count": 5.0, "ratio": 5.0, "ids": [1.0, 2],
                           "nested": {"n": -3e0}, "label": "x"});
        assert!(integers_as_integers(&schema, &mut p));
        assert_eq!(
            serde_json::to_string(&p).unwrap(),
            r#"{"count":5,"ids":[1,2],"label":"x","nested":{"n":-3},"ratio":5.0}"#
        );
        assert!(!integers_as_integers(&schema, &mut p), "nothing left");
        let mut fraction = json!({"count": 5.5});
        assert!(!integers_as_integers(&schema, &mut fraction));
        assert_eq!(fraction, json!({"count": 5.5}));
    }

    #[test]
    fn booleans_in_any_case() {
        let base = json!({"count": 1, "mode": "m", "version": 2, "unit": "ms"});
        for (s, b) in [("TRUE", true), ("False", false), ("true", true)] {
            let mut p = base.clone();
            p["on"] = json!(s);
            let (p, _) = repaired(p);
            assert_eq!(p["on"], json!(b), "{s}");
        }
    }

    #[test]
    fn a_tools_named_violations_repair_what_they_name() {
        let params = json!({"items": [{"qty": 1}, {"qty": "x"}, {}, {"qty": "5"}], "on": "TRUE"});
        let named = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        match repair_named(
            &params,
            &named(&[
                "at /items/3/qty: must be an integer",
                "at /on: Input should be a valid boolean (bool_parsing)",
            ]),
        ) {
            Outcome::Repaired { params: p, changes } => {
                // only what the tool named: items[1] stays as it was
                assert_eq!(
                    p,
                    json!({"items": [{"qty": 1}, {"qty": "x"}, {}, {"qty": 5}], "on": true})
                );
                assert_eq!(changes.len(), 2);
                assert_eq!(changed_top_level(&p, &changes).len(), 2);
            }
            other => panic!("{other:?}"),
        }
        for refused in [
            "at /items/1/qty: must be an integer",
            "at /items/3/qty: is wrong",
            "at /items/2/qty: must be an integer",
            "at /items/0/qty: must be an integer",
            "the body is wrong",
        ] {
            assert!(
                matches!(
                    repair_named(&params, &named(&[refused])),
                    Outcome::Refused { .. }
                ),
                "{refused}"
            );
        }
    }
}
