//! Following a task over its Server-Sent Events stream until it ends.
//!
//! Three ways to show it: a progress bar on a terminal (steps done / total, the running steps,
//! recovery events printed above the bar as they happen), plain lines when standard error is
//! not a terminal, and one JSON event per line with `--json`. The task's own status decides the
//! end and the exit code: the server ends the stream once the task is terminal; a task that
//! stops in `needs_intervention` ends the watch too.

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use eventsource_stream::Eventsource;
use futures::StreamExt;
use indicatif::{ProgressBar, ProgressStyle};
use reqwest::Method;
use serde_json::Value;

use crate::client::{CliError, Client, api_error};
use crate::render;

/// How a connection that broke mid-stream is retried (resuming after the last event seen).
const RECONNECTS: u32 = 5;
const RECONNECT_PAUSE: Duration = Duration::from_millis(500);
/// The step counts are re-read at most this often while events arrive.
const REFRESH_EVERY: Duration = Duration::from_millis(250);

const TERMINAL: [&str; 3] = ["succeeded", "failed", "cancelled"];

/// Follows the task; exit 0 when it succeeds, 1 when it ends otherwise.
pub async fn watch(client: &Client, id: &str, json: bool) -> Result<ExitCode, CliError> {
    let task = client.get(&format!("/api/v1/tasks/{id}")).await?;
    let mut view = View::new(json, &task);
    let mut last_seq = 0i64;
    let status = status_of(&task);
    if TERMINAL.contains(&status.as_str()) || status == "needs_intervention" {
        // nothing more will happen: the log as it is
        let events = client
            .get(&format!("/api/v1/tasks/{id}/events?limit=10000"))
            .await?;
        for e in events.as_array().into_iter().flatten() {
            view.event(e);
        }
    } else {
        follow(client, id, &mut view, &mut last_seq).await?;
    }
    let task = client.get(&format!("/api/v1/tasks/{id}")).await?;
    let result = client.get(&format!("/api/v1/tasks/{id}/result")).await.ok();
    view.finish(&task, result.as_ref());
    Ok(if status_of(&task) == "succeeded" {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

fn status_of(task: &Value) -> String {
    task["status"].as_str().unwrap_or_default().to_string()
}

/// Reads the stream until the server ends it (the task is terminal) or the task needs
/// intervention; reconnects after a broken connection.
async fn follow(
    client: &Client,
    id: &str,
    view: &mut View,
    last_seq: &mut i64,
) -> Result<(), CliError> {
    let path = format!("/api/v1/tasks/{id}/events");
    let mut failures = 0;
    let mut refreshed = Instant::now();
    loop {
        let mut req = client
            .request(Method::GET, &path)
            .header("accept", "text/event-stream");
        if *last_seq > 0 {
            req = req.header("last-event-id", last_seq.to_string());
        }
        let res = match req.send().await {
            Ok(r) if r.status().is_success() => r,
            Ok(r) => {
                let status = r.status();
                return Err(api_error(status, &r.text().await.unwrap_or_default()));
            }
            Err(source) if failures >= RECONNECTS => {
                return Err(CliError::Connect {
                    url: client.url(&path),
                    source,
                });
            }
            Err(_) => {
                failures += 1;
                tokio::time::sleep(RECONNECT_PAUSE).await;
                continue;
            }
        };
        let mut stream = res.bytes_stream().eventsource();
        let mut broken = false;
        while let Some(item) = stream.next().await {
            let Ok(ev) = item else {
                broken = true;
                break;
            };
            let Ok(e) = serde_json::from_str::<Value>(&ev.data) else {
                continue;
            };
            *last_seq = e["seq"].as_i64().unwrap_or(*last_seq);
            failures = 0;
            view.event(&e);
            let kind = e["kind"].as_str().unwrap_or_default();
            let ends = matches!(
                kind,
                "task_succeeded" | "task_failed" | "task_cancelled" | "intervention_required"
            );
            if ends || refreshed.elapsed() >= REFRESH_EVERY {
                refreshed = Instant::now();
                let task = client.get(&format!("/api/v1/tasks/{id}")).await?;
                view.counts(&task);
                if status_of(&task) == "needs_intervention" {
                    // the stream stays open for a resume: show what is logged, and stop
                    return catch_up(client, id, view, last_seq).await;
                }
            }
        }
        // the server ends the stream only once the task is terminal
        let task = client.get(&format!("/api/v1/tasks/{id}")).await?;
        view.counts(&task);
        let status = status_of(&task);
        if TERMINAL.contains(&status.as_str()) || status == "needs_intervention" {
            return catch_up(client, id, view, last_seq).await;
        }
        if broken {
            failures += 1;
            if failures > RECONNECTS {
                return Err(CliError::Protocol {
                    url: client.url(&path),
                    detail: "the event stream keeps breaking".into(),
                });
            }
            tokio::time::sleep(RECONNECT_PAUSE).await;
        }
    }
}

/// Shows the events logged after `last_seq` (what the stream had not delivered yet).
async fn catch_up(
    client: &Client,
    id: &str,
    view: &mut View,
    last_seq: &mut i64,
) -> Result<(), CliError> {
    let rest = client
        .get(&format!(
            "/api/v1/tasks/{id}/events?after={last_seq}&limit=10000"
        ))
        .await?;
    for e in rest.as_array().into_iter().flatten() {
        *last_seq = e["seq"].as_i64().unwrap_or(*last_seq);
        view.event(e);
    }
    Ok(())
}

/// The three outputs.
enum Mode {
    Bar(ProgressBar),
    Plain,
    Json,
}

struct View {
    mode: Mode,
    id: String,
    /// step id → tool of the steps started and not yet finished
    running: BTreeMap<String, String>,
    started: Instant,
}

impl View {
    fn new(json: bool, task: &Value) -> Self {
        let id = task["task_id"].as_str().unwrap_or_default().to_string();
        let mode = if json {
            Mode::Json
        } else if std::io::stderr().is_terminal() {
            let bar = ProgressBar::new(task["steps"]["total"].as_u64().unwrap_or(0));
            bar.set_style(
                ProgressStyle::with_template(
                    "{spinner} [{bar:30}] {pos}/{len} steps · {elapsed} · {msg}",
                )
                .expect("a valid template")
                .progress_chars("=> "),
            );
            bar.enable_steady_tick(Duration::from_millis(120));
            Mode::Bar(bar)
        } else {
            println!("watching task {id}");
            Mode::Plain
        };
        let mut v = Self {
            mode,
            id,
            running: BTreeMap::new(),
            started: Instant::now(),
        };
        v.counts(task);
        v
    }

    fn event(&mut self, e: &Value) {
        let kind = e["kind"].as_str().unwrap_or_default();
        let step = e["payload"]["step_id"].as_str().map(str::to_string);
        match (kind, step) {
            ("step_started", Some(s)) => {
                let tool = e["payload"]["tool"].as_str().unwrap_or_default();
                self.running.insert(s, tool.to_string());
            }
            ("step_completed" | "step_failed" | "step_released" | "step_rescued", Some(s)) => {
                self.running.remove(&s);
            }
            _ => {}
        }
        let line = render::event_line(e);
        match &self.mode {
            Mode::Json => println!("{e}"),
            Mode::Plain => println!("{line}"),
            Mode::Bar(bar) => {
                if !matches!(kind, "step_started" | "step_completed") {
                    bar.println(line);
                }
                bar.set_message(self.running_text());
            }
        }
    }

    fn running_text(&self) -> String {
        let mut names: Vec<String> = self
            .running
            .iter()
            .take(3)
            .map(|(s, t)| format!("{s} ({t})"))
            .collect();
        if self.running.len() > 3 {
            names.push(format!("+{}", self.running.len() - 3));
        }
        if names.is_empty() {
            "waiting".into()
        } else {
            format!("running {}", names.join(", "))
        }
    }

    /// Step counts from `GET /tasks/{id}`.
    fn counts(&mut self, task: &Value) {
        if let Mode::Bar(bar) = &self.mode {
            let s = &task["steps"];
            let n = |k: &str| s[k].as_u64().unwrap_or(0);
            bar.set_length(n("total"));
            bar.set_position(n("succeeded") + n("failed") + n("skipped"));
        }
    }

    fn finish(self, task: &Value, result: Option<&Value>) {
        let status = status_of(task);
        let secs = self.started.elapsed().as_secs_f64();
        if let Mode::Bar(bar) = &self.mode {
            bar.finish_and_clear();
        }
        if let Mode::Json = self.mode {
            println!(
                "{}",
                serde_json::json!({"task_id": self.id, "status": status, "result": result})
            );
            return;
        }
        let mut line = format!("task {} {status}", self.id);
        if let Some(r) = result {
            if let Some(ms) = r["duration_ms"].as_f64() {
                line.push_str(&format!(" in {:.1} s", ms / 1000.0));
            }
            if let Some(score) = r["final_score"].as_f64() {
                line.push_str(&format!(", score {score:.0}"));
            }
            if let Some(err) = r["error"].as_object() {
                let msg = err
                    .get("message")
                    .or_else(|| err.get("reason"))
                    .or_else(|| err.get("code"))
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                line.push_str(&format!(": {msg}"));
            }
        } else {
            line.push_str(&format!(" (watched {secs:.1} s)"));
        }
        println!("{line}");
    }
}
