//! What the binaries print: logs (tracing, `RUST_LOG`, default `info`) on stderr, as text or,
//! with `[log] format = "json"`, one JSON object per line; and the few notices meant for the
//! operator on stdout (the address the API listens on, …) in the same format.

use std::sync::OnceLock;

use serde_json::json;

use crate::config::LogFormat;

static FORMAT: OnceLock<LogFormat> = OnceLock::new();

/// Install the tracing subscriber. JSON lines carry `timestamp`, `level`, `target`, the event's
/// fields (`message` among them) at the top level and the fields of the spans it happened in
/// (`request_id`, `task_id`, `step_id`, …) under `spans`. A panic is logged as one such line.
pub fn init(format: LogFormat) {
    let _ = FORMAT.set(format);
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,sqlx=warn"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Text => {
            let _ = builder.try_init();
        }
        LogFormat::Json => {
            let _ = builder
                .json()
                .flatten_event(true)
                .with_current_span(false)
                .with_span_list(true)
                .try_init();
            std::panic::set_hook(Box::new(|info| {
                let at = info
                    .location()
                    .map(|l| format!("{}:{}", l.file(), l.line()))
                    .unwrap_or_default();
                tracing::error!(panic = %info, at, "panicked");
            }));
        }
    }
}

/// The format [`init`] installed (text before it ran).
pub fn format() -> LogFormat {
    FORMAT.get().copied().unwrap_or_default()
}

/// The installed format, or before [`init`] ran (the configuration failed to load) the one
/// `APP_LOG__FORMAT` asks for.
pub fn format_or_env() -> LogFormat {
    FORMAT.get().copied().unwrap_or_else(LogFormat::from_env)
}

/// A line for the operator on stdout: the text itself, or one JSON object whose `message` is it.
pub fn notice(message: &str) {
    match format() {
        LogFormat::Text => println!("{message}"),
        LogFormat::Json => println!("{}", line("INFO", message)),
    }
}

/// How a binary reports the error it exits with, on stderr: `Error: …` with its causes, or one
/// JSON object.
pub fn report_exit_error(e: &anyhow::Error, format: LogFormat) {
    match format {
        LogFormat::Text => eprintln!("Error: {e:?}"),
        LogFormat::Json => eprintln!("{}", line("ERROR", &format!("{e:#}"))),
    }
}

fn line(level: &str, message: &str) -> serde_json::Value {
    json!({
        "timestamp": chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Micros, true),
        "level": level,
        "message": message,
        "target": "trellis",
    })
}
