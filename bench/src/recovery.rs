//! `--recovery` (scenario 12): a fault server of our own fails the way public services fail;
//! every case runs with the rules brain's three tiers and with plain retries (step reflection
//! off), each with 1 task and with 10 tasks at once on its tool, each of the four on a fresh
//! database. Per case: the share of tasks that healed, tool calls beyond what a perfect client
//! would need, time to heal (p50 / p99), runaways (not ended in bounded time, or more calls
//! than a bound), and for the rate limits the calls that came before an announced reset.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use anyhow::Result;
use serde_json::{Value, json};
use trellis::config::Settings;

use trellis::store::Store;
use trellis::store::tools::NewTool;
use trellis::testkit::faults::{Crowded, FaultServer, RateForm, RateWindow, Reply, Seen};
use trellis::worker::{self, WorkerConfig};
use uuid::Uuid;

use crate::sql::BenchSql;

/// Tasks at once per case: one alone, then many on one tool, then one task whose step is a
/// map of [`MAP_ITEMS`] items on the tool.
pub const AT_ONCE: [usize; 3] = [1, 10, MAP_ITEMS];
/// Items of the map shape (its `at_once` in the figures).
pub const MAP_ITEMS: usize = 40;
/// A task not ended after this is a runaway: what the shipped defaults promise for a tool that
/// never answers (a step waits on its open circuit at most `[worker] tool_wait_max_secs`, 300 s,
/// then one cool-down, 5 s), with a margin.
const BOUND: Duration = Duration::from_secs(360);
/// A task that made more calls than this is a runaway.
const MAX_CALLS: i64 = 20;

/// One failure class.
struct Case {
    name: &'static str,
    /// A perfect client heals it.
    recoverable: bool,
    /// Calls a perfect client makes per task (it cannot avoid the failures the server scripts
    /// per call, nor the alternative's call).
    min_calls: i64,
    /// Extra fields of the tool (alternatives, schema, timeout, endpoint, breaker).
    tool: Value,
    parameters: Value,
    script: Script,
    /// A step before the case's own whose output its parameters read (route, script): the
    /// task is `make` → the case's step; its calls count too.
    producer: Option<(String, Script)>,
    /// A rate limit's window: the calls before its announced reset are counted.
    window: Option<Arc<RateWindow>>,
    /// A crowd after a hold: the calls before a reset it announced are counted, and the first
    /// wave's refusals (in flight before its first answer) are no extra calls.
    crowd: Option<Arc<Crowded>>,
}

fn http_date(t: SystemTime) -> String {
    chrono::DateTime::<chrono::Utc>::from(t)
        .format("%a, %d %b %Y %H:%M:%S GMT")
        .to_string()
}

fn html(status: u16) -> Reply {
    Reply::text(
        status,
        "text/html",
        "<html><head><title>Bad Gateway</title></head><body><h1>502 Bad Gateway</h1><hr>nginx</body></html>",
    )
}

/// A case a perfect client heals, with the calls it needs per task.
fn heals(
    name: &'static str,
    min_calls: i64,
    tool: Value,
    parameters: Value,
    answer: impl Fn(&Seen) -> Reply + Send + Sync + 'static,
) -> Case {
    let script = script(answer);
    Case {
        name,
        recoverable: true,
        min_calls,
        tool,
        parameters,
        script,
        producer: None,
        window: None,
        crowd: None,
    }
}

/// A case nothing can heal: it must end, bounded.
fn stops(
    name: &'static str,
    min_calls: i64,
    tool: Value,
    parameters: Value,
    answer: impl Fn(&Seen) -> Reply + Send + Sync + 'static,
) -> Case {
    Case {
        recoverable: false,
        ..heals(name, min_calls, tool, parameters, answer)
    }
}

/// How a case's route answers.
type Script = Arc<dyn Fn(&Seen) -> Reply + Send + Sync>;

fn script(f: impl Fn(&Seen) -> Reply + Send + Sync + 'static) -> Script {
    Arc::new(f)
}

/// The first `n` calls of each step answered by `fail`, the rest echoed.
macro_rules! first {
    ($n:expr, $fail:expr) => {
        |s: &Seen| {
            if s.nth <= $n {
                $fail(s)
            } else {
                Reply::echo(s)
            }
        }
    };
}

/// The crowd after a hold (class 3): the first call holds the service for a second, after
/// which it takes three calls a second, saying so (`RateLimit-Policy`) or not (only
/// `Retry-After`). A perfect client calls once per task, beside the first wave's refusals.
fn crowd(name: &'static str, announce: bool) -> Case {
    let svc = Crowded::new(Duration::from_secs(1), 3, Duration::from_secs(1), announce);
    let answering = svc.clone();
    Case {
        crowd: Some(svc),
        ..heals(name, 1, json!({}), json!({}), move |s: &Seen| {
            answering.answer(s)
        })
    }
}

fn retry_after_date(_: &Seen) -> Reply {
    let now = SystemTime::now();
    Reply::status(503)
        .header("date", http_date(now))
        .header("retry-after", http_date(now + Duration::from_secs(2)))
}

fn cases() -> Vec<Case> {
    let strict = json!({"type": "object",
        "properties": {"count": {"type": "integer"}, "mode": {"type": "string", "default": "fast"},
                       "tags": {"type": "array", "items": {"type": "string"}}},
        "required": ["count", "mode"]});
    let schema = || json!({"input_schema": strict.clone()});
    let alt = || json!({"alternatives": ["backup"]});
    let none = || json!({});
    let hints = |s: &Seen| {
        if s.parameters["limit"] == json!(100) {
            Reply::echo(s)
        } else {
            Reply::json(
                422,
                json!({"error": {"message": "limit must be at most 100", "hints": {"limit": 100}}}),
            )
        }
    };
    let mut cases = vec![
        heals(
            "429_retry_after",
            3,
            none(),
            none(),
            first!(2, |_| Reply::status(429).header("retry-after", "1")),
        ),
        heals(
            "429_no_retry_after",
            3,
            none(),
            none(),
            first!(2, |_| Reply::status(429)),
        ),
        heals(
            "503_retry_after_date",
            2,
            none(),
            none(),
            first!(1, retry_after_date),
        ),
        heals("outage_3s", 1, none(), none(), |s| {
            if s.since_route < Duration::from_secs(3) {
                Reply::status(503)
            } else {
                Reply::echo(s)
            }
        }),
        heals("outage_20s", 1, none(), none(), |s| {
            if s.since_route < Duration::from_secs(20) {
                Reply::status(503)
            } else {
                Reply::echo(s)
            }
        }),
        heals(
            "flaky_500",
            2,
            none(),
            none(),
            first!(1, |_| Reply::status(500)),
        ),
        heals(
            "proxy_502_html",
            3,
            none(),
            none(),
            first!(2, |_| html(502)),
        ),
        heals(
            "timeout",
            2,
            json!({"timeout_ms": 500}),
            none(),
            first!(1, |s| Reply::echo(s).after(Duration::from_secs(3))),
        ),
        heals(
            "garbled_json_200",
            2,
            none(),
            none(),
            first!(1, |_| Reply::text(200, "application/json", "{\"output\": ")),
        ),
        heals("404_with_alternative", 2, alt(), none(), |_| {
            Reply::status(404)
        }),
        heals("410_with_alternative", 2, alt(), none(), |_| {
            Reply::status(410)
        }),
        heals(
            "refused_with_alternative",
            2,
            json!({"alternatives": ["backup"], "refused": true}),
            none(),
            Reply::echo,
        ),
        heals("422_with_hints", 2, none(), json!({"limit": 500}), hints),
        heals(
            "schema_string_to_integer",
            1,
            schema(),
            json!({"count": "5", "mode": "slow"}),
            Reply::echo,
        ),
        heals(
            "schema_default",
            1,
            schema(),
            json!({"count": 5}),
            Reply::echo,
        ),
        heals(
            "schema_one_item_array",
            1,
            schema(),
            json!({"count": 5, "mode": "slow", "tags": "a"}),
            Reply::echo,
        ),
        stops("401_unauthorized", 1, none(), none(), |_| {
            Reply::status(401)
        }),
        stops("403_forbidden", 1, alt(), none(), |_| Reply::status(403)),
        stops("404_no_alternative", 1, none(), none(), |_| {
            Reply::status(404)
        }),
        stops("400_bad_request", 1, none(), none(), |_| {
            Reply::json(400, json!({"error": {"message": "unknown field"}}))
        }),
        stops(
            "schema_lossy",
            0,
            schema(),
            json!({"count": "5.5", "mode": "slow"}),
            Reply::echo,
        ),
        stops("429_forever", 1, none(), none(), |_| {
            Reply::status(429).header("retry-after", "1")
        }),
        stops("503_forever", 1, none(), none(), |_| Reply::status(503)),
    ];
    cases.extend(generalised());
    cases.extend(answers());
    cases
}

/// The classes of the recovery issue's fifth step: a 200 that says it failed (each envelope
/// and a `failure_when` rule, with a retry time in its body), a 422 naming the refused
/// parameter in each of the four shapes (repaired, or healed where the value is made), a
/// `RateLimit` with two policies, a reset past the wait limit, items that each fail twice.
fn answers() -> Vec<Case> {
    let items = |fourth: Value| json!([{"qty": 1}, {"qty": 2}, {"qty": 3}, {"qty": fourth}]);
    let mut out = vec![
        heals("healthy", 1, json!({}), json!({}), Reply::echo),
        heals(
            "flaky_twice_503",
            3,
            json!({}),
            json!({}),
            first!(2, |_| Reply::status(503)),
        ),
        // the breaker before the fifth step: each outage counted at once
        heals(
            "flaky_twice_503_confirm_1",
            3,
            json!({"circuit_breaker": {"confirm_failures": 1}}),
            json!({}),
            first!(2, |_| Reply::status(503)),
        ),
        crowd("crowd_after_hold_announced", true),
        crowd("crowd_after_hold_retry_after_only", false),
        // the same with a tool whose first retry comes after 50 ms (not the shipped 500 ms)
        heals(
            "flaky_twice_503_backoff_50ms",
            3,
            json!({"retry": {"initial_interval_ms": 50}}),
            json!({}),
            first!(2, |_| Reply::status(503)),
        ),
    ];
    let envelopes: [(&'static str, Value, Value); 4] = [
        (
            "200_ok_false_retry_after",
            json!({"ok": false, "error": "ratelimited", "retry_after": 1}),
            json!({}),
        ),
        (
            "200_graphql_errors_retry",
            json!({"data": null, "errors": [{"message": "Too many requests",
                "extensions": {"code": "RATE_LIMITED", "retryAfter": 1}}]}),
            json!({}),
        ),
        (
            "200_jsonapi_errors_503",
            json!({"errors": [{"status": "503", "title": "Service Unavailable",
                "meta": {"retry_after": 1}}]}),
            json!({}),
        ),
        (
            "200_failure_when_rule",
            json!({"status": "error", "retry_in": 1}),
            json!({"failure_when": [{"pointer": "/status", "equals": "error",
                "retry_after_pointer": "/retry_in"}]}),
        ),
    ];
    for (name, body, tool) in envelopes {
        out.push(heals(name, 2, tool, json!({}), move |s: &Seen| {
            if s.nth <= 1 {
                Reply::json(200, body.clone())
            } else {
                Reply::echo(s)
            }
        }));
    }
    let shapes: [(&'static str, &'static str, Value); 4] = [
        (
            "422_problem_invalid_params",
            "422_problem_invalid_params_make",
            json!({"title": "Unprocessable", "status": 422,
                "invalid-params": [{"name": "items[3].qty", "reason": "must be an integer"}]}),
        ),
        (
            "422_fastapi_detail_loc",
            "422_fastapi_detail_loc_make",
            json!({"detail": [{"loc": ["body", "parameters", "items", 3, "qty"],
                "msg": "Input should be a valid integer", "type": "int_parsing"}]}),
        ),
        (
            "422_jsonapi_source_pointer",
            "422_jsonapi_source_pointer_make",
            json!({"errors": [{"status": "422", "detail": "must be an integer",
                "source": {"pointer": "/parameters/items/3/qty"}}]}),
        ),
        (
            "422_openai_error_param",
            "422_openai_error_param_make",
            json!({"error": {"message": "expected an integer", "param": "items[3].qty"}}),
        ),
    ];
    for (name, maker, body) in shapes {
        let refuse = move |s: &Seen| match s.parameters.pointer("/items/3/qty") {
            Some(q) if q.is_i64() => Reply::echo(s),
            _ => Reply::json(422, body.clone()),
        };
        let refuse = script(refuse);
        let r = refuse.clone();
        out.push(heals(
            name,
            2,
            json!({}),
            json!({"items": items(json!("4"))}),
            move |s| r(s),
        ));
        // the value made upstream (no coercion makes "four" an integer): the producer is
        // run again, told why
        let mut up = heals(
            maker,
            4,
            json!({}),
            json!({"items": "${make.output.items}"}),
            move |s| refuse(s),
        );
        up.producer = Some((
            format!("{maker}_producer"),
            script(move |s: &Seen| {
                let fourth = if s.feedback.is_null() {
                    json!("four")
                } else {
                    json!(4)
                };
                Reply::json(200, json!({"output": {"items": items(fourth)}}))
            }),
        ));
        out.push(up);
    }
    out.push(heals(
        "429_two_policies",
        2,
        json!({}),
        json!({}),
        |s: &Seen| {
            if s.nth <= 1 {
                Reply::status(429).header("ratelimit", r#""burst";r=0;t=1, "day";r=4000;t=40000"#)
            } else {
                Reply::echo(s)
            }
        },
    ));
    out.push(stops("429_daily_quota", 1, json!({}), json!({}), |_| {
        Reply::status(429).header("retry-after", "3600")
    }));
    out
}

/// The classes of the recovery issue's second part: many steps on one flaky service (the open
/// circuit must not spend their attempts), every rate-limit convention, the lossless coercions,
/// and a bad value made by an earlier step.
fn generalised() -> Vec<Case> {
    let typed = json!({"type": "object",
        "properties": {"count": {"type": "integer"}, "on": {"type": "boolean"},
                       "unit": {"enum": ["ms"]}},
        "required": ["count"]});
    let schema = || json!({"input_schema": typed.clone()});
    // a typed server: an integer must be written as one
    let strict = |s: &Seen| {
        let p = &s.parameters;
        let count_ok = p["count"].as_i64().is_some();
        let on_ok = p.get("on").is_none_or(Value::is_boolean);
        if count_ok && on_ok {
            Reply::echo(s)
        } else {
            Reply::json(
                400,
                json!({"error": {"message": "count must be an integer"}}),
            )
        }
    };
    let mut out = vec![
        heals(
            "five_503s_per_step",
            6,
            json!({}),
            json!({}),
            first!(5, |_| Reply::status(503)),
        ),
        heals(
            "schema_exponent",
            1,
            schema(),
            json!({"count": "5e0"}),
            strict,
        ),
        heals(
            "schema_trailing_zero",
            1,
            schema(),
            json!({"count": "5.0"}),
            strict,
        ),
        heals(
            "schema_whole_float",
            1,
            schema(),
            json!({"count": 5.0}),
            strict,
        ),
        heals(
            "schema_boolean_case",
            1,
            schema(),
            json!({"count": 5, "on": "TRUE"}),
            strict,
        ),
        heals(
            "schema_one_value_enum",
            1,
            json!({"input_schema": {"type": "object",
                "properties": {"count": {"type": "integer"}, "unit": {"enum": ["ms"]},
                               "v": {"const": 2}},
                "required": ["count", "unit", "v"]}}),
            json!({"count": 5}),
            strict,
        ),
        stops(
            "schema_lossy_exponent",
            0,
            schema(),
            json!({"count": "5.5e0"}),
            strict,
        ),
    ];
    for form in RateForm::ALL {
        let window = RateWindow::new(form, Duration::from_secs(2));
        let answer = window.clone();
        let mut c = heals(form.name(), 2, json!({}), json!({}), move |s| {
            answer.answer(s)
        });
        c.window = Some(window);
        out.push(c);
    }
    // a producer that does better when told why, and one that cannot
    let mut up = heals(
        "upstream_heals",
        3,
        schema(),
        json!({"count": "${make.output.n}"}),
        strict,
    );
    up.producer = Some((
        "upstream_heals_make".into(),
        script(|s: &Seen| {
            let n = if s.feedback.is_null() {
                json!("five")
            } else {
                json!(5)
            };
            Reply::json(200, json!({"output": {"n": n}}))
        }),
    ));
    out.push(up);
    let mut stuck = stops(
        "upstream_stuck",
        1,
        schema(),
        json!({"count": "${make.output.n}"}),
        strict,
    );
    stuck.producer = Some((
        "upstream_stuck_make".into(),
        script(|_| Reply::json(200, json!({"output": {"n": "five"}}))),
    ));
    out.push(stuck);
    out
}

/// One case's figures in one mode.
#[derive(Debug, Clone, Default)]
pub struct Figures {
    pub case: &'static str,
    /// Tasks at once on the case's tool.
    pub at_once: usize,
    pub recoverable: bool,
    /// Calls that came before a rate limit's announced reset (rate-limit cases).
    pub early_calls: usize,
    pub tasks: usize,
    pub healed: usize,
    /// Ended (any terminal status) within the bound and the call cap.
    pub bounded: usize,
    pub runaway: usize,
    /// Calls beyond the minimum, summed over the healed tasks.
    pub extra_calls: i64,
    /// Submit → end of each healed (recoverable) or ended (unrecoverable) task, ms.
    pub times_ms: Vec<f64>,
}

/// Both modes of one run.
pub struct Run {
    pub rules: Vec<Figures>,
    pub plain: Vec<Figures>,
}

/// Run every case with the rules brain and (`plain`) with plain retries, with 1 task, with 10
/// at once and as a 40-item map, each on a fresh database and fault server.
pub async fn run(fresh: impl AsyncFn(&str) -> Result<(Store, String)>, plain: bool) -> Result<Run> {
    let mut out = Vec::new();
    let modes: &[bool] = if plain { &[true, false] } else { &[true] };
    for &reflect in modes {
        let mut figs = Vec::new();
        for at_once in AT_ONCE
            .into_iter()
            .filter(|n| wanted("BENCH_RECOVERY_SHAPES", &n.to_string()))
        {
            let mode = if reflect { "rules" } else { "plain" };
            let (store, url) = fresh(&format!("recovery_{mode}_{at_once}")).await?;
            figs.extend(one_mode(&store, &url, reflect, at_once).await?);
        }
        out.push(figs);
    }
    let plain = if plain {
        out.pop().expect("two modes")
    } else {
        Vec::new()
    };
    let rules = out.pop().expect("the rules mode");
    Ok(Run { rules, plain })
}

/// Whether a comma-separated filter in the environment (unset: everything) names `what`.
fn wanted(var: &str, what: &str) -> bool {
    std::env::var(var).map_or(true, |list| list.split(',').any(|x| x.trim() == what))
}

async fn one_mode(store: &Store, url: &str, reflect: bool, at_once: usize) -> Result<Vec<Figures>> {
    let faults = FaultServer::start().await;
    let mut cases = cases();
    cases.retain(|c| wanted("BENCH_RECOVERY_CASES", c.name));
    faults.route("backup", Reply::echo);
    store
        .create_tool(&tool("backup", faults.endpoint("backup"), &json!({})))
        .await?;
    let closed = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?;
    for c in &cases {
        let answer = c.script.clone();
        faults.route(c.name, move |s| answer(s));
        let endpoint = match c.tool.get("refused") {
            Some(_) => format!("http://{closed}/refused"),
            None => faults.endpoint(c.name),
        };
        store.create_tool(&tool(c.name, endpoint, &c.tool)).await?;
        if let Some((route, answer)) = &c.producer {
            let answer = answer.clone();
            faults.route(route, move |s| answer(s));
            store
                .create_tool(&tool(route, faults.endpoint(route), &json!({})))
                .await?;
        }
    }
    let mut of_case: HashMap<Uuid, usize> = HashMap::new();
    let map = at_once == MAP_ITEMS;
    for (i, c) in cases.iter().enumerate() {
        // a producer's cases are one value made once: not a map's
        let n = match (map, &c.producer) {
            (true, Some(_)) => 0,
            (true, None) => 1,
            (false, _) => at_once,
        };
        for _ in 0..n {
            of_case.insert(submit(store, c, reflect, map).await?, i);
        }
    }
    let workers = start_workers(url).await?;
    let start = Instant::now();
    while store.count_unfinished_tasks().await? > 0 && start.elapsed() < BOUND {
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    workers.0.cancel();
    for h in workers.1 {
        let _ = h.await;
    }
    figures(store, &faults, &cases, &of_case, at_once).await
}

fn tool(id: &str, endpoint: String, extra: &Value) -> NewTool {
    let mut t = trellis::testkit::http_tool(id, endpoint);
    if let Some(ms) = extra.get("timeout_ms").and_then(Value::as_i64) {
        t.timeout_ms = ms as i32;
    }
    if let Some(s) = extra.get("input_schema") {
        t.input_schema = s.clone();
    }
    if let Some(a) = extra.get("alternatives") {
        t.alternatives = serde_json::from_value(a.clone()).unwrap_or_default();
    }
    if let Some(b) = extra.get("circuit_breaker") {
        t.circuit_breaker = serde_json::from_value(b.clone()).ok();
    }
    if let Some(r) = extra.get("retry") {
        t.retry = serde_json::from_value(r.clone()).ok();
    }
    if let Some(rules) = extra.get("failure_when") {
        t.failure_when = serde_json::from_value(rules.clone()).unwrap_or_default();
    }
    t
}

async fn submit(store: &Store, c: &Case, reflect: bool, map: bool) -> Result<Uuid> {
    let mut steps = match &c.producer {
        None => json!([{"id": "call", "tool": c.name, "parameters": c.parameters}]),
        Some((route, _)) => json!([
            {"id": "make", "tool": route, "parameters": {}},
            {"id": "call", "tool": c.name, "parameters": c.parameters, "dependencies": ["make"]}
        ]),
    };
    if map {
        // the case's step as a map over MAP_ITEMS items, all at once
        let list: Vec<usize> = (0..MAP_ITEMS).collect();
        let steps = steps.as_array_mut().expect("steps");
        let call = steps.last_mut().expect("the case's step");
        call["parameters"]["i"] = json!("${item}");
        call["map"] = json!({"over": "${list.output.items}", "max_items": MAP_ITEMS,
                             "max_parallel": MAP_ITEMS});
        let mut deps = call["dependencies"].as_array().cloned().unwrap_or_default();
        deps.push(json!("list"));
        call["dependencies"] = json!(deps);
        steps.insert(
            0,
            json!({"id": "list", "tool": "echo", "parameters": {"items": list}}),
        );
    }
    let mut task = trellis::testkit::new_task(steps);
    task.description = format!("fault case {}", c.name);
    task.limits.step_reflection = reflect;
    Ok(store.submit_task(&task).await?.task_id)
}

/// Two workers with the shipped defaults (backoff, breaker, Retry-After cap), allowed to
/// reach the fault server on loopback.
async fn start_workers(
    url: &str,
) -> Result<(
    tokio_util::sync::CancellationToken,
    Vec<tokio::task::JoinHandle<anyhow::Result<()>>>,
)> {
    let stop = tokio_util::sync::CancellationToken::new();
    let mut s = Settings::default();
    s.tools.allow_cidrs = Some(vec!["127.0.0.1/32".parse()?]);
    s.worker.poll_ms = 200;
    let mut handles = Vec::new();
    for _ in 0..2 {
        let store = Store::connect(url, 20, Duration::from_secs(30)).await?;
        let cfg = WorkerConfig::from_settings(&s);
        let stop = stop.clone();
        handles.push(tokio::spawn(async move {
            worker::run(store, cfg, stop).await?;
            Ok(())
        }));
    }
    Ok((stop, handles))
}

async fn figures(
    store: &Store,
    faults: &FaultServer,
    cases: &[Case],
    of_case: &HashMap<Uuid, usize>,
    at_once: usize,
) -> Result<Vec<Figures>> {
    let mut out: Vec<Figures> = cases
        .iter()
        .map(|c| Figures {
            case: c.name,
            at_once,
            recoverable: c.recoverable,
            early_calls: c.window.as_ref().map_or(0, |w| w.early())
                + c.crowd.as_ref().map_or(0, |w| w.early()),
            ..Default::default()
        })
        .collect();
    // calls per task: what the server saw, and the connections refused
    let mut calls: HashMap<Uuid, i64> = HashMap::new();
    for c in cases {
        for call in faults.calls(c.name) {
            if let Ok(id) = call.task_id.parse() {
                *calls.entry(id).or_default() += 1;
            }
        }
        if let Some((route, _)) = &c.producer {
            for call in faults.calls(route) {
                if let Ok(id) = call.task_id.parse() {
                    *calls.entry(id).or_default() += 1;
                }
            }
        }
        if c.tool.get("refused").is_some() {
            for (id, n) in store.attempts_per_task(c.name).await? {
                *calls.entry(id).or_default() += n;
            }
        }
    }
    for call in faults.calls("backup") {
        if let Ok(id) = call.task_id.parse() {
            *calls.entry(id).or_default() += 1;
        }
    }
    for (id, status, ms) in store.task_outcomes().await? {
        let Some(&i) = of_case.get(&id) else { continue };
        let (c, f) = (&cases[i], &mut out[i]);
        let n = calls.get(&id).copied().unwrap_or(0);
        // a map task calls its tool once per item at the least
        let (min_calls, max_calls) = match at_once == MAP_ITEMS {
            true => (c.min_calls * MAP_ITEMS as i64, MAX_CALLS * MAP_ITEMS as i64),
            false => (c.min_calls, MAX_CALLS),
        };
        let ended = matches!(
            status.as_str(),
            "succeeded" | "failed" | "cancelled" | "needs_intervention"
        );
        f.tasks += 1;
        if !ended || n > max_calls {
            f.runaway += 1;
            continue;
        }
        f.bounded += 1;
        if status == "succeeded" {
            f.healed += 1;
            f.extra_calls += (n - min_calls).max(0);
        }
        if status == "succeeded" || !c.recoverable {
            f.times_ms.push(ms);
        }
    }
    // the first wave's refusals were on their way before the service said a word
    for (c, f) in cases.iter().zip(out.iter_mut()) {
        if let Some(w) = &c.crowd {
            f.extra_calls = (f.extra_calls - w.first_wave() as i64).max(0);
            // `BENCH_RECOVERY_TRACE=1`: where a crowd's extra calls came (ms since its first)
            if f.extra_calls > 0 && std::env::var("BENCH_RECOVERY_TRACE").is_ok_and(|v| v == "1") {
                eprintln!("trace {} ×{at_once}: {}", c.name, w.trace());
            }
        }
    }
    out.retain(|f| f.tasks > 0);
    Ok(out)
}
