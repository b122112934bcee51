//! Answers checked against the OpenAPI document the server serves: the status must be
//! documented for its route and method, and a JSON body must match the documented schema.
//!
//! The test harness wraps every server it starts with [`check_answer`]: an in-process test
//! app fails the test that caused a mismatch when it is dropped, and a `trellis-api` process
//! started with `[debug] check_answers_file` appends each mismatch to that file (and logs it),
//! which the harness reads when it stops the process. So the document cannot drift from what
//! the handlers answer. Off unless configured: nothing is buffered or checked otherwise.

use std::collections::HashMap;
use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use axum::extract::{MatchedPath, Request, State};
use axum::middleware::Next;
use axum::response::Response;
use serde_json::Value;

/// The served document, the validators built from it, and the mismatches seen so far.
pub struct AnswerCheck {
    doc: Value,
    validators: Mutex<HashMap<String, Arc<jsonschema::Validator>>>,
    mismatches: Mutex<Vec<String>>,
    /// Where each mismatch is also appended, one per line.
    file: Option<PathBuf>,
}

impl AnswerCheck {
    pub fn new() -> Arc<Self> {
        Self::with_file(None)
    }

    /// A check that also appends each mismatch to `file`.
    pub fn with_file(file: Option<PathBuf>) -> Arc<Self> {
        let doc: Value = serde_json::from_str(crate::api::openapi_document(true))
            .expect("the served document is JSON");
        Arc::new(Self {
            doc,
            validators: Mutex::new(HashMap::new()),
            mismatches: Mutex::new(Vec::new()),
            file,
        })
    }

    /// The mismatches seen so far (emptied).
    pub fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.mismatches.lock().unwrap())
    }

    fn note(&self, m: String) {
        if let Some(path) = &self.file {
            tracing::error!(mismatch = %m, "an answer differs from the OpenAPI document");
            let line = format!("{}\n", m.replace('\n', " "));
            let written = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .and_then(|mut f| f.write_all(line.as_bytes()));
            if let Err(e) = written {
                tracing::error!(error = %e, path = %path.display(), "writing the mismatch failed");
            }
        }
        self.mismatches.lock().unwrap().push(m);
    }

    /// A validator for a response schema, its `$ref`s resolved in the document's components.
    fn validator(&self, key: &str, schema: &Value) -> Result<Arc<jsonschema::Validator>, String> {
        if let Some(v) = self.validators.lock().unwrap().get(key) {
            return Ok(v.clone());
        }
        let mut root = schema.clone();
        if let Value::Object(m) = &mut root {
            m.insert("components".into(), self.doc["components"].clone());
        } else {
            return Err(format!("{key}: the schema is not an object"));
        }
        let v = Arc::new(
            jsonschema::validator_for(&root).map_err(|e| format!("{key}: bad schema: {e}"))?,
        );
        self.validators
            .lock()
            .unwrap()
            .insert(key.to_string(), v.clone());
        Ok(v)
    }

    /// Check one answer (`method` in lower case, `path` the route as the document names it).
    pub fn check(&self, method: &str, path: &str, status: u16, ctype: &str, body: &[u8]) {
        let op = &self.doc["paths"][path][method];
        if op.is_null() {
            // not a documented route (the dashboard, the docs, /mcp)
            return;
        }
        let what = format!("{} {path} answered {status}", method.to_uppercase());
        let responses = &op["responses"];
        let documented = match &responses[status.to_string()] {
            Value::Null => &responses["default"],
            r => r,
        };
        if documented.is_null() {
            self.note(format!("{what}, which the document does not list"));
            return;
        }
        let Some(content) = documented["content"].as_object() else {
            return;
        };
        let Some(json) = content.get("application/json") else {
            return;
        };
        if !ctype.starts_with("application/json") {
            self.note(format!("{what} with content type {ctype:?}, not JSON"));
            return;
        }
        let value: Value = match serde_json::from_slice(body) {
            Ok(v) => v,
            Err(e) => return self.note(format!("{what} with a body that is not JSON: {e}")),
        };
        let Some(schema) = json.get("schema") else {
            return;
        };
        let key = format!("{method} {path} {status}");
        match self.validator(&key, schema) {
            Ok(v) => {
                let errors: Vec<String> = v
                    .iter_errors(&value)
                    .take(5)
                    .map(|e| format!("{} at {}", e, e.instance_path()))
                    .collect();
                if !errors.is_empty() {
                    let shown = value.to_string();
                    let shown: String = shown.chars().take(400).collect();
                    self.note(format!(
                        "{what} with a body the document does not allow: {}; body {shown}",
                        errors.join("; ")
                    ));
                }
            }
            Err(e) => self.note(e),
        }
    }
}

/// The middleware: answer first, then check (a streamed answer, `text/event-stream`, is not
/// buffered).
pub async fn check_answer(
    State(c): State<Arc<AnswerCheck>>,
    matched: Option<MatchedPath>,
    req: Request,
    next: Next,
) -> Response {
    let method = req.method().as_str().to_lowercase();
    let path = matched.map(|m| m.as_str().to_owned());
    let resp = next.run(req).await;
    let Some(path) = path else {
        return resp;
    };
    let ctype = resp
        .headers()
        .get(axum::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    if ctype.starts_with("text/event-stream") {
        return resp;
    }
    let (parts, body) = resp.into_parts();
    let bytes = match axum::body::to_bytes(body, usize::MAX).await {
        Ok(b) => b,
        Err(e) => {
            c.note(format!("{method} {path}: the body could not be read: {e}"));
            return Response::from_parts(parts, axum::body::Body::empty());
        }
    };
    c.check(&method, &path, parts.status.as_u16(), &ctype, &bytes);
    Response::from_parts(parts, axum::body::Body::from(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `trellis-api` process started with `[debug] check_answers_file` writes each mismatch
    /// there, a line each, and nothing for an answer that matches.
    #[test]
    fn mismatches_are_written_to_the_file_and_matches_are_not() {
        let f = std::env::temp_dir().join(format!("answers-{}.txt", uuid::Uuid::new_v4()));
        let c = AnswerCheck::with_file(Some(f.clone()));
        let ok = br#"{"error": {"code": "not_found", "message": "no task"}}"#;
        c.check("get", "/api/v1/tasks/{id}", 404, "application/json", ok);
        assert!(!f.exists(), "a matching answer wrote a mismatch");
        c.check(
            "get",
            "/api/v1/tasks/{id}",
            200,
            "application/json",
            br#"{"nope": 1}"#,
        );
        c.check("get", "/api/v1/tasks/{id}", 299, "application/json", b"{}");
        c.check("get", "/api/v1/tasks/{id}", 200, "text/plain", b"hi");
        let text = std::fs::read_to_string(&f).unwrap();
        let _ = std::fs::remove_file(&f);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3, "{text}");
        assert!(lines[0].contains("does not allow"), "{text}");
        assert!(lines[1].contains("does not list"), "{text}");
        assert!(lines[2].contains("not JSON"), "{text}");
        assert_eq!(c.take().len(), 3);
    }
}
