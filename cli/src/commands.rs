//! One function per command: call the API, print the answer.

use std::process::ExitCode;

use serde_json::{Value, json};

use crate::client::{CliError, Client};
use crate::files::{read_document, submit_body};
use crate::render::{event_line, table, table_of_objects};
use crate::watch::watch;
use crate::{
    Approvals, Bulk, BulkCommand, Cli, Command, Keys, Mcp, Prices, Registry, Schedules, Tools,
};

pub async fn run(cli: Cli) -> Result<ExitCode, CliError> {
    let c = Client::new(&cli.url, cli.api_key.clone())?;
    let json = cli.json;
    match cli.command {
        Command::Submit {
            file,
            watch: w,
            description,
            priority,
            idempotency_key,
        } => {
            let mut body = submit_body(&file, read_document(&file)?)?;
            if let Some(d) = description {
                body["description"] = json!(d);
            }
            if let Some(p) = priority {
                body["priority"] = json!(p);
            }
            if let Some(k) = idempotency_key {
                body["idempotency_key"] = json!(k);
            }
            let v = c.post("/api/v1/tasks", &body).await?;
            started(&c, &v, w, json, "submitted").await
        }
        Command::Watch { id } => watch(&c, &id, json).await,
        Command::Tasks { bulk: Some(b), .. } => bulk_action(&c, b, json).await,
        Command::Tasks {
            bulk: None,
            status,
            limit,
            before,
        } => tasks(&c, status, limit, before, json).await,
        Command::Bulk(b) => bulk(&c, b, json).await,
        Command::Prices(p) => prices(&c, p, json).await,
        Command::Show { id } => show(&c, &id, json).await,
        Command::Result { id } => {
            let v = c.get(&format!("/api/v1/tasks/{id}/result")).await?;
            print_json(&v);
            Ok(ExitCode::SUCCESS)
        }
        Command::Events { id, after } => {
            let v = c
                .get(&format!(
                    "/api/v1/tasks/{id}/events?after={after}&limit=10000"
                ))
                .await?;
            if json {
                print_json(&v);
            } else {
                for e in v.as_array().into_iter().flatten() {
                    println!("{:>5} {}", e["seq"], event_line(e));
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Cancel { id } => {
            let v = c
                .post(&format!("/api/v1/tasks/{id}/cancel"), &json!({}))
                .await?;
            say(
                json,
                &v,
                &format!("task {id}: {}", v["status"].as_str().unwrap_or("cancelled")),
            );
            Ok(ExitCode::SUCCESS)
        }
        Command::Resume {
            id,
            overrides,
            watch: w,
        } => {
            let body = match overrides {
                None => json!({}),
                Some(f) => resume_body(read_document(&f)?),
            };
            let v = c.post(&format!("/api/v1/tasks/{id}/resume"), &body).await?;
            started(&c, &v, w, json, "resumed").await
        }
        Command::Rerun {
            id,
            from,
            overrides,
            watch: w,
        } => {
            let step_overrides = match overrides {
                None => json!({}),
                Some(f) => read_document(&f)?,
            };
            let body = json!({"from_step": from, "step_overrides": step_overrides});
            let v = c.post(&format!("/api/v1/tasks/{id}/rerun"), &body).await?;
            started(&c, &v, w, json, "rerun").await
        }
        Command::Tools(Tools::Registry(r)) => registry(&c, "tools", r, json).await,
        Command::Tools(Tools::Pause { id }) => pause(&c, &id, true, json).await,
        Command::Tools(Tools::Resume { id }) => pause(&c, &id, false, json).await,
        Command::Templates(r) => registry(&c, "templates", r, json).await,
        Command::Keys(k) => keys(&c, k, json).await,
        Command::Workers => {
            let v = c.get("/api/v1/workers").await?;
            list_or_json(
                json,
                &v,
                &[
                    ("worker", "worker_id"),
                    ("host", "host"),
                    ("pid", "pid"),
                    ("concurrency", "concurrency"),
                    ("in flight", "in_flight"),
                    ("last heartbeat", "last_heartbeat_at"),
                    ("started", "started_at"),
                ],
            );
            Ok(ExitCode::SUCCESS)
        }
        Command::Stats => stats(&c, json).await,
        Command::Approvals(a) => approvals(&c, a, json).await,
        Command::Schedules(s) => schedules(&c, s, json).await,
        Command::Mcp(m) => mcp(&c, m, json).await,
        Command::Event { key, payload } => {
            let payload: Value = match payload {
                Some(p) => serde_json::from_str(&p)
                    .map_err(|e| CliError::Usage(format!("--payload is not JSON: {e}")))?,
                None => json!({}),
            };
            let v = c
                .post("/api/v1/events", &json!({"key": key, "payload": payload}))
                .await?;
            say(
                json,
                &v,
                &format!("resolved {} waiting step(s)", v["resolved"]),
            );
            Ok(ExitCode::SUCCESS)
        }
    }
}

async fn mcp(c: &Client, m: Mcp, json: bool) -> Result<ExitCode, CliError> {
    match m {
        Mcp::Ls => {
            let v = c.get("/api/v1/mcp-servers").await?;
            list_or_json(
                json,
                &v,
                &[
                    ("id", "id"),
                    ("endpoint", "endpoint"),
                    ("tools", "tools"),
                    ("refreshed", "refreshed_at"),
                ],
            );
        }
        Mcp::Import {
            id,
            endpoint,
            headers,
        } => {
            let mut h = serde_json::Map::new();
            for kv in headers {
                let (k, v) = kv
                    .split_once('=')
                    .ok_or_else(|| CliError::Usage(format!("--header {kv:?} is not Name=value")))?;
                h.insert(k.to_string(), json!(v));
            }
            let v = c
                .post(
                    "/api/v1/mcp-servers",
                    &json!({"id": id, "endpoint": endpoint, "headers": h}),
                )
                .await?;
            say(
                json,
                &v,
                &format!(
                    "imported {} tool(s) from {id}: {}",
                    v["tools"].as_array().map_or(0, Vec::len),
                    v["tools"]
                ),
            );
        }
        Mcp::Refresh { id } => {
            let v = c
                .post(&format!("/api/v1/mcp-servers/{id}/refresh"), &json!({}))
                .await?;
            say(json, &v, &format!("{id}: {}", v["tools"]));
        }
        Mcp::Rm { id } => {
            c.delete(&format!("/api/v1/mcp-servers/{id}")).await?;
            say(
                json,
                &json!({"deleted": id}),
                &format!("removed {id} and its tools"),
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

async fn approvals(c: &Client, a: Approvals, json: bool) -> Result<ExitCode, CliError> {
    match a {
        Approvals::Ls => {
            let v = c.get("/api/v1/waits?status=open&kind=approval").await?;
            list_or_json(
                json,
                &v,
                &[
                    ("wait", "wait_id"),
                    ("task", "task_id"),
                    ("step", "step_id"),
                    ("tool", "tool"),
                    ("prompt", "prompt"),
                    ("role", "role"),
                    ("expires", "expires_at"),
                ],
            );
        }
        Approvals::Approve {
            wait_id,
            parameters,
            comment,
        } => {
            let mut body = json!({"comment": comment});
            if let Some(f) = parameters {
                body["parameters"] = read_document(&f)?;
            }
            let v = c
                .post(&format!("/api/v1/waits/{wait_id}/approve"), &body)
                .await?;
            say(json, &v, &format!("approved {wait_id}"));
        }
        Approvals::Reject { wait_id, comment } => {
            let v = c
                .post(
                    &format!("/api/v1/waits/{wait_id}/reject"),
                    &json!({"comment": comment}),
                )
                .await?;
            say(json, &v, &format!("rejected {wait_id}"));
        }
    }
    Ok(ExitCode::SUCCESS)
}

async fn schedules(c: &Client, s: Schedules, json: bool) -> Result<ExitCode, CliError> {
    let path = |id: &str| format!("/api/v1/schedules/{id}");
    let v = match s {
        Schedules::Ls => {
            let v = c.get("/api/v1/schedules").await?;
            list_or_json(
                json,
                &v,
                &[
                    ("id", "id"),
                    ("cron", "cron"),
                    ("zone", "timezone"),
                    ("enabled", "enabled"),
                    ("next", "next_fire_at"),
                    ("last tick", "last_tick"),
                    ("last task", "last_task_id"),
                ],
            );
            return Ok(ExitCode::SUCCESS);
        }
        Schedules::Add { file } => {
            let v = c.post("/api/v1/schedules", &read_document(&file)?).await?;
            say(
                json,
                &v,
                &format!(
                    "schedule {} added; next tick {}",
                    v["id"], v["next_fire_at"]
                ),
            );
            return Ok(ExitCode::SUCCESS);
        }
        Schedules::Pause { id } => {
            c.send(
                c.request(reqwest::Method::PATCH, &path(&id))
                    .json(&json!({"enabled": false})),
                &path(&id),
            )
            .await?
        }
        Schedules::Resume { id } => {
            c.send(
                c.request(reqwest::Method::PATCH, &path(&id))
                    .json(&json!({"enabled": true})),
                &path(&id),
            )
            .await?
        }
        Schedules::Trigger { id } => {
            let v = c
                .post(&format!("/api/v1/schedules/{id}/trigger"), &json!({}))
                .await?;
            say(
                json,
                &v,
                &format!("submitted task {}", v["task_id"].as_str().unwrap_or("")),
            );
            return Ok(ExitCode::SUCCESS);
        }
        Schedules::Rm { id } => {
            c.delete(&path(&id)).await?;
            say(json, &json!({"deleted": id}), &format!("removed {id}"));
            return Ok(ExitCode::SUCCESS);
        }
    };
    say(
        json,
        &v,
        &format!(
            "schedule {}: {}",
            v["id"].as_str().unwrap_or(""),
            if v["enabled"] == true {
                "active"
            } else {
                "paused"
            }
        ),
    );
    Ok(ExitCode::SUCCESS)
}

fn print_json(v: &Value) {
    println!(
        "{}",
        serde_json::to_string_pretty(v).unwrap_or_else(|_| v.to_string())
    );
}

/// `--json`: the answer; otherwise one line.
fn say(json: bool, v: &Value, line: &str) {
    if json {
        print_json(v);
    } else {
        println!("{line}");
    }
}

fn list_or_json(json: bool, v: &Value, columns: &[(&str, &str)]) {
    if json {
        print_json(v);
    } else {
        let rows = v.as_array().cloned().unwrap_or_default();
        if rows.is_empty() {
            println!("(none)");
        } else {
            println!("{}", table(&rows, columns));
        }
    }
}

/// After a submit, resume or rerun: print the task id, and follow it with `--watch`.
async fn started(
    c: &Client,
    v: &Value,
    watch_it: bool,
    json: bool,
    what: &str,
) -> Result<ExitCode, CliError> {
    let id = v["task_id"].as_str().unwrap_or_default().to_string();
    if json {
        // the API's answer first; with --watch the events follow, one per line
        println!("{v}");
    } else {
        let status = v["status"].as_str().unwrap_or_default();
        println!("{what} task {id} ({status})");
    }
    if watch_it {
        watch(c, &id, json).await
    } else {
        Ok(ExitCode::SUCCESS)
    }
}

/// A resume overrides file: a whole body (`plan` or `step_overrides`), or the overrides map.
fn resume_body(doc: Value) -> Value {
    if doc.get("plan").is_some() || doc.get("step_overrides").is_some() {
        doc
    } else {
        json!({"step_overrides": doc})
    }
}

async fn tasks(
    c: &Client,
    status: Option<String>,
    limit: u32,
    before: Option<String>,
    json: bool,
) -> Result<ExitCode, CliError> {
    let mut path = format!("/api/v1/tasks?limit={limit}");
    if let Some(s) = status {
        path.push_str(&format!("&status={}", encode(&s)));
    }
    if let Some(b) = before {
        path.push_str(&format!("&before={}", encode(&b)));
    }
    let v = c.get(&path).await?;
    list_or_json(
        json,
        &v,
        &[
            ("task", "task_id"),
            ("status", "status"),
            ("description", "description"),
            ("created", "created_at"),
            ("updated", "updated_at"),
        ],
    );
    Ok(ExitCode::SUCCESS)
}

/// One query value or path segment, percent-encoded.
fn encode(s: &str) -> String {
    percent_encoding::utf8_percent_encode(s, percent_encoding::NON_ALPHANUMERIC).to_string()
}

async fn show(c: &Client, id: &str, json: bool) -> Result<ExitCode, CliError> {
    let task = c.get(&format!("/api/v1/tasks/{id}")).await?;
    let plan = c.get(&format!("/api/v1/tasks/{id}/plan")).await?;
    if json {
        print_json(&json!({"task": task, "plan": plan}));
        return Ok(ExitCode::SUCCESS);
    }
    let s = &task["steps"];
    let k = &task["counters"];
    println!("task        {}", task["task_id"].as_str().unwrap_or(id));
    println!(
        "status      {}",
        task["status"].as_str().unwrap_or_default()
    );
    println!(
        "round       {}   plan version {} ({})",
        task["round"],
        task["plan_version"],
        plan["origin"].as_str().unwrap_or_default()
    );
    println!(
        "steps       {} total: {} succeeded, {} failed, {} running, {} ready, {} blocked, {} skipped",
        s["total"],
        s["succeeded"],
        s["failed"],
        s["running"],
        s["ready"],
        s["blocked"],
        s["skipped"]
    );
    println!(
        "recovery    {} replans, {} repairs, {} consecutive failures",
        k["task_replan_count"], k["single_step_repair_count"], k["consecutive_failures"]
    );
    println!(
        "created     {}",
        task["created_at"].as_str().unwrap_or_default()
    );
    if let Some(err) = task.get("error").filter(|e| !e.is_null()) {
        println!("error       {err}");
    }
    let steps = plan["steps"].as_array().cloned().unwrap_or_default();
    println!(
        "{}",
        table(
            &steps,
            &[
                ("step", "id"),
                ("tool", "tool"),
                ("status", "status"),
                ("retries", "retry_count"),
                ("depends on", "dependencies"),
            ]
        )
    );
    Ok(ExitCode::SUCCESS)
}

async fn registry(c: &Client, kind: &str, r: Registry, json: bool) -> Result<ExitCode, CliError> {
    let base = format!("/api/v1/{kind}");
    match r {
        Registry::Ls => {
            let v = c.get(&base).await?;
            let columns: &[(&str, &str)] = if kind == "tools" {
                &[
                    ("id", "id"),
                    ("name", "name"),
                    ("endpoint", "endpoint"),
                    ("timeout ms", "timeout_ms"),
                    ("max concurrency", "max_concurrency"),
                    ("alternatives", "alternatives"),
                ]
            } else {
                &[
                    ("id", "id"),
                    ("description", "description"),
                    ("input schema", "input_schema"),
                ]
            };
            list_or_json(json, &v, columns);
        }
        Registry::Add { file } => {
            let doc = read_document(&file)?;
            let entries = match doc {
                Value::Array(items) => items,
                one => vec![one],
            };
            for e in entries {
                let v = c.post(&base, &e).await?;
                let id = v["id"].as_str().unwrap_or_default();
                say(json, &v, &format!("registered {} {id}", singular(kind)));
            }
        }
        Registry::Rm { id } => {
            let v = c.delete(&format!("{base}/{}", encode(&id))).await?;
            say(json, &v, &format!("removed {} {id}", singular(kind)));
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `tools pause` and `tools resume`.
/// Start a bulk action (`trellis tasks rerun|cancel|resume`), maybe following it.
async fn bulk_action(c: &Client, b: BulkCommand, json: bool) -> Result<ExitCode, CliError> {
    let (action, f, from) = match b {
        BulkCommand::Rerun { filter, from } => ("rerun", filter, Some(from)),
        BulkCommand::Cancel { filter } => ("cancel", filter, None),
        BulkCommand::Resume { filter } => ("resume", filter, None),
    };
    let mut body = json!({"action": action, "dry_run": f.dry_run});
    if f.ids.is_empty() {
        let metadata =
            match &f.metadata {
                None => None,
                Some(m) => Some(serde_json::from_str::<Value>(m).map_err(|e| {
                    CliError::Usage(format!("--metadata is not a JSON object: {e}"))
                })?),
            };
        let filter: serde_json::Map<String, Value> = [
            ("status", f.status.map(Value::from)),
            ("since", f.since.map(Value::from)),
            ("until", f.until.map(Value::from)),
            ("q", f.q.map(Value::from)),
            ("template", f.template.map(Value::from)),
            ("metadata", metadata),
        ]
        .into_iter()
        .filter_map(|(k, v)| v.map(|v| (k.to_string(), v)))
        .collect();
        body["filter"] = Value::Object(filter);
    } else {
        body["ids"] = json!(f.ids);
    }
    if let Some(from) = from {
        // `first-failed` on the command line, `first_failed` on the wire (a step id as is)
        let first = matches!(from.as_str(), "first-failed" | "first_failed");
        body["from_step"] = json!(if first { "first_failed" } else { from.as_str() });
    }
    if let Some(n) = f.name {
        body["name"] = json!(n);
    }
    let v = c.post("/api/v1/bulk-actions", &body).await?;
    if f.dry_run {
        say(
            json,
            &v,
            &format!("{action} would match {} tasks", v["matched"]),
        );
        return Ok(ExitCode::SUCCESS);
    }
    let id = v["bulk_action_id"].as_str().unwrap_or_default().to_string();
    say(
        json,
        &v,
        &format!("bulk {action} {id}: {} tasks matched", v["matched"]),
    );
    if !f.wait {
        return Ok(ExitCode::SUCCESS);
    }
    loop {
        let p = c.get(&format!("/api/v1/bulk-actions/{id}")).await?;
        if p["status"] != "running" {
            say(json, &p, &progress_line(&p));
            let all = p["status"] == "done" && p["failed"] == 0;
            return Ok(if all {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            });
        }
        if !json {
            eprintln!("{}", progress_line(&p));
        }
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    }
}

fn progress_line(p: &Value) -> String {
    format!(
        "bulk {} {}: {} — {}/{} done, {} failed",
        p["action"].as_str().unwrap_or_default(),
        p["bulk_action_id"].as_str().unwrap_or_default(),
        p["status"].as_str().unwrap_or_default(),
        p["done"],
        p["matched"],
        p["failed"]
    )
}

/// `trellis prices ls|set`.
async fn prices(c: &Client, p: Prices, json: bool) -> Result<ExitCode, CliError> {
    match p {
        Prices::List => {
            let v = c.get("/api/v1/model-prices").await?;
            list_or_json(
                json,
                &v,
                &[
                    ("model", "model"),
                    ("from", "valid_from"),
                    ("input", "input_per_mtok"),
                    ("output", "output_per_mtok"),
                    ("cached input", "cached_input_per_mtok"),
                ],
            );
        }
        Prices::Set {
            model,
            input,
            output,
            cached_input,
            valid_from,
        } => {
            let mut body =
                json!({"model": model, "input_per_mtok": input, "output_per_mtok": output});
            if let Some(x) = cached_input {
                body["cached_input_per_mtok"] = json!(x);
            }
            if let Some(t) = valid_from {
                body["valid_from"] = json!(t);
            }
            let v = c.put("/api/v1/model-prices", &body).await?;
            say(
                json,
                &v,
                &format!(
                    "{model}: {input} / {output} per million tokens from {}",
                    v["valid_from"].as_str().unwrap_or_default()
                ),
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `trellis bulk list|show|abort`.
async fn bulk(c: &Client, b: Bulk, json: bool) -> Result<ExitCode, CliError> {
    match b {
        Bulk::List => {
            let v = c.get("/api/v1/bulk-actions").await?;
            list_or_json(
                json,
                &v,
                &[
                    ("bulk action", "bulk_action_id"),
                    ("action", "action"),
                    ("status", "status"),
                    ("matched", "matched"),
                    ("done", "done"),
                    ("failed", "failed"),
                    ("name", "name"),
                ],
            );
        }
        Bulk::Show { id } => {
            let v = c
                .get(&format!("/api/v1/bulk-actions/{}", encode(&id)))
                .await?;
            say(json, &v, &progress_line(&v));
            if !json {
                for f in v["failures"].as_array().into_iter().flatten() {
                    println!(
                        "  {}: {}",
                        f["task_id"].as_str().unwrap_or_default(),
                        f["error"].as_str().unwrap_or_default()
                    );
                }
            }
        }
        Bulk::Abort { id } => {
            let v = c
                .post(
                    &format!("/api/v1/bulk-actions/{}/abort", encode(&id)),
                    &json!({}),
                )
                .await?;
            say(json, &v, &progress_line(&v));
        }
    }
    Ok(ExitCode::SUCCESS)
}

async fn pause(c: &Client, id: &str, paused: bool, json: bool) -> Result<ExitCode, CliError> {
    let action = if paused { "pause" } else { "resume" };
    let v = c
        .post(
            &format!("/api/v1/tools/{}/{action}", encode(id)),
            &json!({}),
        )
        .await?;
    let said = if paused {
        format!("paused tool {id}: its steps wait queued")
    } else {
        format!("resumed tool {id}")
    };
    say(json, &v, &said);
    Ok(ExitCode::SUCCESS)
}

fn singular(kind: &str) -> &str {
    kind.strip_suffix('s').unwrap_or(kind)
}

async fn keys(c: &Client, k: Keys, json: bool) -> Result<ExitCode, CliError> {
    match k {
        Keys::Create { name, role } => {
            let v = c
                .post("/api/v1/keys", &json!({"name": name, "role": role}))
                .await?;
            if json {
                print_json(&v);
            } else {
                println!(
                    "created {} key {} ({})",
                    v["role"].as_str().unwrap_or_default(),
                    v["name"].as_str().unwrap_or_default(),
                    v["id"].as_str().unwrap_or_default()
                );
                println!("key: {}", v["key"].as_str().unwrap_or_default());
                println!("(shown this once: only its hash is stored)");
            }
        }
        Keys::Ls => {
            let v = c.get("/api/v1/keys").await?;
            list_or_json(
                json,
                &v,
                &[
                    ("id", "id"),
                    ("name", "name"),
                    ("role", "role"),
                    ("prefix", "key_prefix"),
                    ("created", "created_at"),
                    ("revoked", "revoked_at"),
                ],
            );
        }
        Keys::Revoke { id } => {
            let v = c.delete(&format!("/api/v1/keys/{}", encode(&id))).await?;
            say(json, &v, &format!("revoked key {id}"));
        }
    }
    Ok(ExitCode::SUCCESS)
}

async fn stats(c: &Client, json: bool) -> Result<ExitCode, CliError> {
    let counts = c.get("/api/v1/stats").await?;
    let recovery = c.get("/api/v1/stats/recovery").await?;
    if json {
        print_json(&json!({"stats": counts, "recovery": recovery}));
        return Ok(ExitCode::SUCCESS);
    }
    for what in ["tasks", "steps"] {
        let rows: Vec<Value> = counts[what]
            .as_object()
            .into_iter()
            .flatten()
            .map(|(s, n)| json!({"status": s, "count": n}))
            .collect();
        println!("{what}");
        println!(
            "{}",
            table(&rows, &[("status", "status"), ("count", "count")])
        );
    }
    for (name, rows) in recovery.as_object().into_iter().flatten() {
        println!("{name}");
        println!(
            "{}",
            table_of_objects(rows.as_array().map(Vec::as_slice).unwrap_or(&[]))
        );
    }
    Ok(ExitCode::SUCCESS)
}
