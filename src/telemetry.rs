//! What the binaries print: logs (tracing, `RUST_LOG`, default `info`) on stderr, as text or,
//! with `[log] format = "json"`, one JSON object per line; and the few notices meant for the
//! operator on stdout (the address the API listens on, …) in the same format.

use std::sync::OnceLock;

use serde_json::json;

use crate::config::{LogFormat, LogSettings};

static FORMAT: OnceLock<LogFormat> = OnceLock::new();

/// Install the tracing subscriber. JSON lines carry `timestamp`, `level`, `target`, the event's
/// fields (`message` among them) at the top level and the fields of the spans it happened in
/// (`request_id`, `task_id`, `step_id`, …) under `spans`. A panic is logged as one such line.
///
/// With `[log] otlp_endpoint` the spans are also exported over OTLP/HTTP (protobuf, batched on
/// the SDK's own thread) as `service` (or `[log] otlp_service_name`); keep the returned
/// [`Telemetry`] alive until the binary ends: dropping it sends what is still buffered.
pub fn init(log: &LogSettings, service: &str) -> Result<Telemetry, OtlpError> {
    use tracing_subscriber::Layer;
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    let format = log.format;
    let _ = FORMAT.set(format);
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,sqlx=warn"));
    let colour = colour(
        std::io::IsTerminal::is_terminal(&std::io::stderr()),
        std::env::var_os("NO_COLOR"),
    );
    let lines = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(colour);
    let lines = match format {
        LogFormat::Text => lines.boxed(),
        LogFormat::Json => lines
            .json()
            .flatten_event(true)
            .with_current_span(false)
            .with_span_list(true)
            .boxed(),
    };
    let provider = match log.otlp() {
        Some(endpoint) => Some(otlp_provider(
            endpoint,
            log.otlp_service_name.as_deref().unwrap_or(service),
        )?),
        None => None,
    };
    let spans = provider.as_ref().map(|p| {
        use opentelemetry::trace::TracerProvider as _;
        tracing_opentelemetry::layer().with_tracer(p.tracer("trellis"))
    });
    let _ = tracing_subscriber::registry()
        .with(filter)
        .with(lines)
        .with(spans)
        .try_init();
    if format == LogFormat::Json {
        std::panic::set_hook(Box::new(|info| {
            let at = info
                .location()
                .map(|l| format!("{}:{}", l.file(), l.line()))
                .unwrap_or_default();
            tracing::error!(panic = %info, at, "panicked");
        }));
    }
    if let Some(endpoint) = log.otlp() {
        tracing::info!(endpoint = %endpoint, "exporting spans over OTLP");
    }
    Ok(Telemetry { provider })
}

/// Whether text logs carry colour codes: only on a terminal, and not when `NO_COLOR` is set to
/// anything but the empty string (<https://no-color.org>). A log file, a pipe or a container's
/// log gets plain lines.
fn colour(stderr_is_terminal: bool, no_color: Option<std::ffi::OsString>) -> bool {
    stderr_is_terminal && no_color.is_none_or(|v| v.is_empty())
}

/// The OTLP exporter could not be built.
#[derive(Debug, thiserror::Error)]
#[error("starting the OTLP span exporter: {0}")]
pub struct OtlpError(String);

/// Keeps the OTLP export running; dropping it flushes the spans still buffered and stops it.
#[must_use = "dropping it stops the span export"]
pub struct Telemetry {
    provider: Option<opentelemetry_sdk::trace::SdkTracerProvider>,
}

impl Drop for Telemetry {
    fn drop(&mut self) {
        if let Some(p) = self.provider.take()
            && let Err(e) = p.shutdown()
        {
            // through the log subscriber, so a JSON deployment still prints only JSON lines
            tracing::warn!(error = %e, "flushing the OTLP spans failed");
        }
    }
}

fn otlp_provider(
    endpoint: &str,
    service: &str,
) -> Result<opentelemetry_sdk::trace::SdkTracerProvider, OtlpError> {
    use opentelemetry_otlp::WithExportConfig;
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
        .with_endpoint(format!("{}/v1/traces", endpoint.trim_end_matches('/')))
        .with_timeout(std::time::Duration::from_secs(10))
        .build()
        .map_err(|e| OtlpError(e.to_string()))?;
    let resource = opentelemetry_sdk::Resource::builder()
        .with_service_name(service.to_string())
        .build();
    Ok(opentelemetry_sdk::trace::SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(resource)
        .build())
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

#[cfg(test)]
mod tests {
    use super::colour;

    #[test]
    fn colour_only_on_a_terminal_without_no_color() {
        assert!(colour(true, None));
        assert!(colour(true, Some("".into())));
        assert!(!colour(true, Some("1".into())));
        assert!(!colour(false, None));
        assert!(!colour(false, Some("1".into())));
    }
}
