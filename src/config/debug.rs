//! `[debug]`: audit aids, off by default.

use serde::Deserialize;

/// Audit aids, off by default (`[debug]`).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DebugSettings {
    /// Keep every LLM call's prompt messages and raw answer in `llm_calls.exchange` (credential
    /// values of the task's metadata and context are redacted).
    pub save_llm_exchanges: bool,
    /// Check every answer of the API against the OpenAPI document it serves; each mismatch is
    /// logged and appended to this file. The test harness sets it on every `trellis-api` it
    /// starts; it costs a buffered body per answer, so leave it unset in production.
    pub check_answers_file: Option<std::path::PathBuf>,
}
