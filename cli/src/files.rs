//! Reading the JSON or YAML files commands take.

use std::path::Path;

use serde_json::Value;

use crate::client::CliError;

/// A JSON or YAML document: by extension (`.json`, `.yaml`, `.yml`), else JSON then YAML.
/// `-` reads standard input.
pub fn read_document(path: &Path) -> Result<Value, CliError> {
    let text = if path == Path::new("-") {
        std::io::read_to_string(std::io::stdin())
    } else {
        std::fs::read_to_string(path)
    }
    .map_err(|e| CliError::Usage(format!("cannot read {}: {e}", path.display())))?;
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    let parsed = match ext.as_deref() {
        Some("json") => serde_json::from_str(&text).map_err(|e| e.to_string()),
        Some("yaml" | "yml") => serde_norway::from_str(&text).map_err(|e| e.to_string()),
        _ => serde_json::from_str(&text)
            .or_else(|_| serde_norway::from_str(&text))
            .map_err(|e| format!("neither JSON nor YAML ({e})")),
    };
    parsed.map_err(|e| CliError::Usage(format!("{}: {e}", path.display())))
}

/// The submit body a file describes: a whole body (it has `plan`, `template` or
/// `description`), or a bare plan (`{"steps": [...]}`) wrapped into one.
pub fn submit_body(path: &Path, doc: Value) -> Result<Value, CliError> {
    let Value::Object(map) = doc else {
        return Err(CliError::Usage(format!(
            "{}: expected an object (a submit body or a plan with steps)",
            path.display()
        )));
    };
    if ["plan", "template", "description"]
        .iter()
        .any(|k| map.contains_key(*k))
    {
        return Ok(Value::Object(map));
    }
    if map.contains_key("steps") {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("plan");
        return Ok(serde_json::json!({
            "description": format!("submitted from {name}"),
            "plan": Value::Object(map),
        }));
    }
    Err(CliError::Usage(format!(
        "{}: expected a submit body (description, plan or template) or a plan (steps)",
        path.display()
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_bare_plan_is_wrapped_and_a_body_kept() {
        let p = Path::new("dir/etl.yaml");
        let plan = json!({"steps": [{"id": "a", "tool": "echo"}]});
        let body = submit_body(p, plan.clone()).unwrap();
        assert_eq!(body["plan"], plan);
        assert_eq!(body["description"], "submitted from etl.yaml");
        let whole = json!({"description": "d", "plan": plan});
        assert_eq!(submit_body(p, whole.clone()).unwrap(), whole);
        assert!(submit_body(p, json!({"x": 1})).is_err());
        assert!(submit_body(p, json!([1])).is_err());
    }

    #[test]
    fn yaml_and_json_files_parse_alike() {
        let dir = std::env::temp_dir().join(format!("trellis-cli-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let y = dir.join("p.yaml");
        std::fs::write(
            &y,
            "steps:\n  - id: a\n    tool: echo\n    parameters: {x: 1}\n",
        )
        .unwrap();
        let j = dir.join("p.json");
        std::fs::write(
            &j,
            r#"{"steps": [{"id": "a", "tool": "echo", "parameters": {"x": 1}}]}"#,
        )
        .unwrap();
        let n = dir.join("p.txt");
        std::fs::write(&n, "steps: [{id: a, tool: echo, parameters: {x: 1}}]").unwrap();
        let a = read_document(&y).unwrap();
        assert_eq!(a, read_document(&j).unwrap());
        assert_eq!(a, read_document(&n).unwrap());
        std::fs::write(&j, "{not json").unwrap();
        assert!(matches!(read_document(&j), Err(CliError::Usage(_))));
        assert!(read_document(&dir.join("missing.json")).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
