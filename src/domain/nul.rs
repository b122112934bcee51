//! NUL characters: PostgreSQL cannot store them in `text` or `jsonb`, and they are never
//! meaningful in Trellis's input or in a tool's output; both are checked with [`find_nul`].

use serde_json::Value;

/// Where in `v` a NUL character is (`plan.steps[0].parameters.x`), if anywhere; `at` is the
/// path of `v` itself. Every request body goes through this, so the walk allocates nothing
/// until it has found one.
pub fn find_nul(v: &Value, at: &str) -> Option<String> {
    let mut path = Vec::new();
    let in_key = locate(v, &mut path)?;
    path.reverse();
    let mut named = at.to_string();
    for seg in path {
        match seg {
            Seg::Key(k) if named.is_empty() => named.push_str(k),
            Seg::Key(k) => {
                named.push('.');
                named.push_str(k);
            }
            Seg::Index(i) => named.push_str(&format!("[{i}]")),
        }
    }
    let here = if named.is_empty() { "the body" } else { &named };
    Some(if in_key {
        format!("a key of {here}")
    } else {
        here.to_string()
    })
}

/// One step of a path into a JSON value.
enum Seg<'a> {
    Key(&'a str),
    Index(usize),
}

/// Whether `v` holds a NUL: `Some(true)` when in a key of the object the path (pushed
/// innermost first) leads to, `Some(false)` when in the string it leads to.
fn locate<'a>(v: &'a Value, path: &mut Vec<Seg<'a>>) -> Option<bool> {
    match v {
        Value::String(s) if s.contains('\0') => Some(false),
        Value::Array(items) => items.iter().enumerate().find_map(|(i, x)| {
            let found = locate(x, path)?;
            path.push(Seg::Index(i));
            Some(found)
        }),
        Value::Object(m) => {
            if m.keys().any(|k| k.contains('\0')) {
                return Some(true);
            }
            m.iter().find_map(|(k, x)| {
                let found = locate(x, path)?;
                path.push(Seg::Key(k));
                Some(found)
            })
        }
        _ => None,
    }
}

/// Replace every NUL character in `s` with U+FFFD (for text we keep whatever it holds, such
/// as a tool's error message).
pub fn scrub(s: &mut String) {
    if s.contains('\0') {
        *s = s.replace('\0', "\u{FFFD}");
    }
}

/// [`scrub`] every string and key of `v`.
pub fn scrub_value(v: &mut Value) {
    match v {
        Value::String(s) => scrub(s),
        Value::Array(items) => items.iter_mut().for_each(scrub_value),
        Value::Object(m) => {
            if m.keys().any(|k| k.contains('\0')) {
                let old = std::mem::take(m);
                for (mut k, x) in old {
                    scrub(&mut k);
                    m.insert(k, x);
                }
            }
            m.values_mut().for_each(scrub_value);
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_where_the_nul_is() {
        assert_eq!(find_nul(&json!({"a": "x"}), ""), None);
        assert_eq!(
            find_nul(&json!({"description": "a\u{0}b"}), "").as_deref(),
            Some("description")
        );
        assert_eq!(
            find_nul(
                &json!({"plan": {"steps": [{"id": "s"}, {"parameters": {"x": ["ok", "\u{0}"]}}]}}),
                ""
            )
            .as_deref(),
            Some("plan.steps[1].parameters.x[1]")
        );
        assert_eq!(
            find_nul(&json!({"metadata": {"k\u{0}": 1}}), "").as_deref(),
            Some("a key of metadata")
        );
        assert_eq!(find_nul(&json!("\u{0}"), "").as_deref(), Some("the body"));
        assert_eq!(
            find_nul(&json!([{"k\u{0}": 1}]), "").as_deref(),
            Some("a key of [0]")
        );
        assert_eq!(
            find_nul(&json!({"a": ["\u{0}"]}), "output").as_deref(),
            Some("output.a[0]")
        );
        assert_eq!(
            find_nul(&json!({"k\u{0}": 1}), "").as_deref(),
            Some("a key of the body")
        );
        let mut v = json!({"a\u{0}": ["x\u{0}y", {"b": "\u{0}"}]});
        scrub_value(&mut v);
        assert_eq!(find_nul(&v, ""), None);
        assert_eq!(v, json!({"a\u{FFFD}": ["x\u{FFFD}y", {"b": "\u{FFFD}"}]}));
    }
}
