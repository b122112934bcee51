//! Human views: tables over the API's JSON, and one line per event.

use comfy_table::{ContentArrangement, Table, presets::UTF8_BORDERS_ONLY};
use serde_json::Value;

/// A table of `rows` (JSON objects) with these columns (header, JSON key); nested values are
/// shown as compact JSON, long text is cut.
pub fn table(rows: &[Value], columns: &[(&str, &str)]) -> String {
    let mut t = Table::new();
    t.load_style(UTF8_BORDERS_ONLY)
        .set_content_arrangement(ContentArrangement::Dynamic)
        .set_header(columns.iter().map(|(h, _)| *h));
    for r in rows {
        t.add_row(columns.iter().map(|(_, k)| cell(&r[*k])));
    }
    t.to_string()
}

/// A table whose columns are the keys of the first row (the statistics views).
pub fn table_of_objects(rows: &[Value]) -> String {
    let Some(Value::Object(first)) = rows.first() else {
        return "(none)".into();
    };
    let keys: Vec<&str> = first.keys().map(String::as_str).collect();
    let columns: Vec<(&str, &str)> = keys.iter().map(|k| (*k, *k)).collect();
    table(rows, &columns)
}

/// One cell: strings as they are (cut at 60 characters), numbers with at most 2 decimals,
/// null as empty, anything else as compact JSON.
pub fn cell(v: &Value) -> String {
    let text = match v {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        Value::Number(n) => match (n.as_i64(), n.as_f64()) {
            (Some(i), _) => i.to_string(),
            (None, Some(f)) => format!("{f:.2}"),
            _ => n.to_string(),
        },
        other => other.to_string(),
    };
    cut(&text, 60)
}

fn cut(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let mut out: String = s.chars().take(max - 1).collect();
        out.push('…');
        out
    }
}

/// `HH:MM:SS.mmm kind step · details` for an event (`{seq, kind, at, payload}`).
pub fn event_line(e: &Value) -> String {
    let at = e["at"].as_str().unwrap_or_default();
    // 2026-11-23T14:15:49.123456Z → 14:15:49.123
    let time = at.get(11..23).unwrap_or(at);
    let kind = e["kind"].as_str().unwrap_or("?");
    let p = &e["payload"];
    let mut parts: Vec<String> = Vec::new();
    if let Some(s) = p["step_id"].as_str() {
        parts.push(s.to_string());
    }
    for (key, label) in [
        ("tool", "tool"),
        ("attempt", "attempt"),
        ("next_attempt", "next attempt"),
        ("delay_ms", "in ms"),
        ("tier", "tier"),
        ("round", "round"),
        ("version", "version"),
        ("plan_version", "version"),
        ("strategy", "strategy"),
        ("strategy_type", "strategy"),
        ("root_cause_category", "cause"),
        ("new_tool", "new tool"),
        ("overall_score", "score"),
        ("score", "score"),
    ] {
        if let Some(v) = p.get(key).filter(|v| !v.is_null() && !v.is_object()) {
            parts.push(format!("{label} {}", cell(v)));
        }
    }
    if let Some(err) = p.get("error").filter(|v| !v.is_null()) {
        let cat = err["category"].as_str().unwrap_or_default();
        let msg = err["message"].as_str().unwrap_or_default();
        parts.push(cut(&format!("{cat}: {msg}"), 100));
    } else if let Some(r) = p["reason"].as_str() {
        parts.push(cut(r, 100));
    }
    format!("{time} {kind:<22} {}", parts.join(" · "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_event_line_names_the_step_and_what_went_wrong() {
        let e = json!({"seq": 3, "kind": "step_failed", "at": "2026-11-23T14:15:49.123456Z",
            "payload": {"step_id": "fetch", "attempt": 1,
                        "error": {"category": "tool_error", "message": "boom"}}});
        let line = event_line(&e);
        assert!(line.starts_with("14:15:49.123 step_failed"), "{line}");
        assert!(
            line.contains("fetch · attempt 1 · tool_error: boom"),
            "{line}"
        );
    }

    #[test]
    fn cells_cut_long_text_and_round_numbers() {
        assert_eq!(cell(&json!(null)), "");
        assert_eq!(cell(&json!(2.345)), "2.35");
        assert_eq!(cell(&json!(7)), "7");
        assert_eq!(cell(&json!("x".repeat(80))).chars().count(), 60);
        let t = table(&[json!({"a": 1, "b": "two"})], &[("A", "a"), ("B", "b")]);
        assert!(t.contains('A') && t.contains("two"), "{t}");
    }
}
