//! The worker runtime: claim ready steps in batches, run them concurrently with no transaction
//! open, record outcomes (fenced), heartbeat leases, rescue steps of dead workers, drain on
//! shutdown.
//!
//! Built on tokio `JoinSet` + `Semaphore` + `CancellationToken` rather than apalis; see
//! ARCHITECTURE.md ("Why not apalis") for the reasons.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::join_all;
use serde_json::{Map, Value, json};
use tokio::sync::{Notify, Semaphore};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use crate::brain::{self, Brain};
use crate::config::Settings;
use crate::domain::params::{self, Scope};
use crate::domain::plan::{self, Reference};
use crate::domain::recovery::Backoff;
use crate::domain::{ActionSpec, DecisionKind, ToolFailure};
use crate::store::decision_queue::{ClaimedDecision, DecisionFence, Lease};
use crate::store::step_queue::{
    Claim, ClaimedStep, FailurePolicy, Fence, StepFailure, StepSuccess,
};
use crate::store::workers::WorkerInfo;
use crate::store::{Store, StoreError};
use crate::tools::{Invocation, ToolOutput, ToolRunner};

#[derive(Debug, Clone)]
pub struct WorkerConfig {
    pub id: Uuid,
    pub concurrency: usize,
    pub lease: Duration,
    pub poll: Duration,
    pub claim_batch: usize,
    pub shutdown_grace: Duration,
    pub rescue_interval: Duration,
    pub policy: FailurePolicy,
    pub brain: Arc<dyn Brain>,
}

impl WorkerConfig {
    pub fn from_settings(s: &Settings) -> Self {
        let w = &s.worker;
        Self {
            id: w
                .id
                .as_deref()
                .and_then(|id| Uuid::parse_str(id).ok())
                .unwrap_or_else(Uuid::now_v7),
            concurrency: w.concurrency as usize,
            lease: Duration::from_secs(w.lease_secs),
            poll: Duration::from_millis(w.poll_ms),
            claim_batch: w.claim_batch as usize,
            shutdown_grace: Duration::from_secs(w.shutdown_grace_secs),
            rescue_interval: Duration::from_millis(w.rescue_interval_ms),
            policy: FailurePolicy {
                backoff: Backoff {
                    base_ms: w.retry_backoff_ms,
                    max_ms: w.retry_backoff_max_ms,
                },
                max_rescues: w.max_rescues as i32,
                lease_secs: w.lease_secs as f64,
            },
            brain: brain::from_settings(s),
        }
    }
}

/// A lease this worker holds.
#[derive(Debug, Clone, Copy)]
enum Held {
    Step(Fence),
    Decision(DecisionFence),
}

/// Leases this worker holds, so a drain can release what did not finish.
type InFlight = Arc<Mutex<HashMap<Uuid, Held>>>;

type CompletionReply = tokio::sync::oneshot::Sender<Result<Option<ClaimedDecision>, StoreError>>;

/// Collects successful steps and records them in batches: one transaction (one commit) for all
/// the completions that arrived while the previous batch was being written.
#[derive(Clone)]
pub struct Completer {
    tx: tokio::sync::mpsc::UnboundedSender<(StepSuccess, CompletionReply)>,
}

impl Completer {
    pub const MAX_BATCH: usize = 64;

    pub fn start(store: Store, lease_secs: f64) -> (Self, tokio::task::JoinHandle<()>) {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<(StepSuccess, CompletionReply)>();
        let handle = tokio::spawn(async move {
            while let Some(first) = rx.recv().await {
                let mut batch = vec![first];
                while batch.len() < Self::MAX_BATCH {
                    match rx.try_recv() {
                        Ok(item) => batch.push(item),
                        Err(_) => break,
                    }
                }
                let (items, replies): (Vec<StepSuccess>, Vec<CompletionReply>) =
                    batch.into_iter().unzip();
                match store.complete_steps(&items, lease_secs).await {
                    Ok(results) => {
                        for (reply, r) in replies.into_iter().zip(results) {
                            let _ = reply.send(r);
                        }
                    }
                    Err(e) => {
                        // the batch rolled back: record each step on its own (with retries)
                        tracing::warn!(error = %e, size = items.len(), "batched completion failed; completing one by one");
                        for (s, reply) in items.into_iter().zip(replies) {
                            let r = with_retries(|| store.complete_step(&s, lease_secs)).await;
                            let _ = reply.send(r);
                        }
                    }
                }
            }
        });
        (Self { tx }, handle)
    }

    /// Record a success; resolves when its batch is committed.
    pub async fn complete(&self, s: StepSuccess) -> Result<Option<ClaimedDecision>, StoreError> {
        let (reply, rx) = tokio::sync::oneshot::channel();
        if self.tx.send((s, reply)).is_err() {
            return Err(StoreError::Db(sqlx::Error::PoolClosed));
        }
        // the completer stopped: as if the store had closed
        rx.await
            .unwrap_or_else(|_| Err(StoreError::Db(sqlx::Error::PoolClosed)))
    }
}

/// Run a worker until `shutdown` is cancelled, then drain: no new claims; in-flight steps get
/// `shutdown_grace` to finish, the rest are released without burning an attempt.
pub async fn run(
    store: Store,
    cfg: WorkerConfig,
    shutdown: CancellationToken,
) -> Result<(), StoreError> {
    store
        .register_worker(&WorkerInfo {
            id: cfg.id,
            host: hostname(),
            pid: std::process::id() as i32,
            concurrency: cfg.concurrency as i32,
        })
        .await?;
    tracing::info!(worker_id = %cfg.id, concurrency = cfg.concurrency, "worker started");

    let background = CancellationToken::new();
    let wake = Arc::new(Notify::new());
    let mut helpers = JoinSet::new();
    helpers.spawn(listen_loop(store.clone(), wake.clone(), background.clone()));
    helpers.spawn(heartbeat_loop(
        store.clone(),
        cfg.clone(),
        background.clone(),
    ));
    helpers.spawn(rescue_loop(
        store.clone(),
        cfg.clone(),
        wake.clone(),
        background.clone(),
    ));

    let runner = ToolRunner::new();
    let (completer, completer_task) = Completer::start(store.clone(), cfg.lease.as_secs_f64());
    let sem = Arc::new(Semaphore::new(cfg.concurrency));
    let in_flight: InFlight = Arc::default();
    let mut running: JoinSet<()> = JoinSet::new();

    loop {
        while running.try_join_next().is_some() {}
        let first = tokio::select! {
            biased;
            _ = shutdown.cancelled() => break,
            p = sem.clone().acquire_owned() => p.expect("semaphore is never closed"),
        };
        let mut permits = vec![first];
        while permits.len() < cfg.claim_batch {
            match sem.clone().try_acquire_owned() {
                Ok(p) => permits.push(p),
                Err(_) => break,
            }
        }
        let wanted = permits.len();
        let mut got = 0;
        let mut failed = false;
        // Never cancelled midway: a claim that committed must reach the in-flight set.
        match store
            .claim_decisions(cfg.id, wanted as i64, cfg.lease.as_secs_f64())
            .await
        {
            Ok(decisions) => {
                for d in decisions {
                    let permit = permits
                        .pop()
                        .expect("claimed at most one decision per permit");
                    got += 1;
                    let (store, cfg, in_flight) = (store.clone(), cfg.clone(), in_flight.clone());
                    running.spawn(async move {
                        run_decisions(&store, &cfg, &in_flight, Some(d)).await;
                        drop(permit);
                    });
                }
            }
            Err(e) => {
                failed = true;
                tracing::warn!(error = %e, "claiming decisions failed; retrying");
            }
        }
        if !permits.is_empty() && !failed {
            match store
                .claim_steps(&Claim {
                    worker_id: cfg.id,
                    limit: permits.len() as i64,
                    lease_secs: cfg.lease.as_secs_f64(),
                })
                .await
            {
                Ok(steps) => {
                    for step in steps {
                        let permit = permits.pop().expect("claimed at most one step per permit");
                        got += 1;
                        in_flight
                            .lock()
                            .expect("in-flight lock")
                            .insert(step.id, Held::Step(step.fence()));
                        let (store, runner, in_flight, cfg, completer) = (
                            store.clone(),
                            runner.clone(),
                            in_flight.clone(),
                            cfg.clone(),
                            completer.clone(),
                        );
                        running.spawn(async move {
                            let id = step.id;
                            let next = execute(&store, &runner, &completer, &cfg, step).await;
                            in_flight.lock().expect("in-flight lock").remove(&id);
                            run_decisions(&store, &cfg, &in_flight, next).await;
                            drop(permit);
                        });
                    }
                }
                Err(e) => {
                    failed = true;
                    tracing::warn!(error = %e, "claiming steps failed; retrying");
                }
            }
        }
        drop(permits);
        if failed {
            tokio::select! {
                _ = shutdown.cancelled() => {}
                _ = tokio::time::sleep(cfg.poll.min(Duration::from_secs(1))) => {}
            }
        } else if got < wanted {
            idle_wait(&store, &cfg, &wake, &shutdown).await;
        }
    }

    tracing::info!(worker_id = %cfg.id, in_flight = running.len(), "draining");
    let drained = tokio::time::timeout(cfg.shutdown_grace, async {
        while running.join_next().await.is_some() {}
    })
    .await
    .is_ok();
    if !drained {
        running.abort_all();
        while running.join_next().await.is_some() {}
        let left: Vec<Held> = in_flight
            .lock()
            .expect("in-flight lock")
            .drain()
            .map(|(_, h)| h)
            .collect();
        for held in left {
            let r = match held {
                Held::Step(fence) => store.release_step(&fence, cfg.id).await,
                Held::Decision(fence) => store.release_decision(&fence).await,
            };
            match r {
                Ok(()) | Err(StoreError::Fenced) => {}
                Err(e) => tracing::warn!(error = %e, "release failed; the lease will expire"),
            }
        }
    }
    background.cancel();
    while helpers.join_next().await.is_some() {}
    drop(completer);
    let _ = completer_task.await;
    store.stop_worker(cfg.id).await?;
    tracing::info!(worker_id = %cfg.id, drained, "worker stopped");
    Ok(())
}

/// Sleep until a notification, the next retry falls due, the poll period ends, or shutdown.
async fn idle_wait(store: &Store, cfg: &WorkerConfig, wake: &Notify, shutdown: &CancellationToken) {
    let mut wait = cfg.poll;
    if let Ok(Some(ms)) = store.next_due_ms().await {
        wait = wait.min(Duration::from_millis(ms.max(1.0).ceil() as u64));
    }
    tokio::select! {
        _ = shutdown.cancelled() => {}
        _ = wake.notified() => {}
        _ = tokio::time::sleep(wait) => {}
    }
}

async fn listen_loop(store: Store, wake: Arc<Notify>, stop: CancellationToken) {
    loop {
        let mut listener = match store.ready_listener().await {
            Ok(l) => l,
            Err(e) => {
                tracing::warn!(error = %e, "LISTEN failed; polling until it works");
                tokio::select! {
                    _ = stop.cancelled() => return,
                    _ = tokio::time::sleep(Duration::from_secs(1)) => continue,
                }
            }
        };
        loop {
            tokio::select! {
                _ = stop.cancelled() => return,
                msg = listener.recv() => match msg {
                    Ok(_) => wake.notify_one(),
                    Err(e) => {
                        tracing::warn!(error = %e, "notification stream broke; reconnecting");
                        wake.notify_one();
                        break;
                    }
                }
            }
        }
    }
}

async fn heartbeat_loop(store: Store, cfg: WorkerConfig, stop: CancellationToken) {
    let period = (cfg.lease / 3).max(Duration::from_millis(100));
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(period) => {}
        }
        if let Err(e) = store.heartbeat(cfg.id, cfg.lease.as_secs_f64()).await {
            tracing::warn!(error = %e, "heartbeat failed");
        }
    }
}

async fn rescue_loop(store: Store, cfg: WorkerConfig, wake: Arc<Notify>, stop: CancellationToken) {
    loop {
        // jitter so that a fleet does not scan in lockstep
        let jitter = Duration::from_millis(u64::from(Uuid::new_v4().as_bytes()[0]) % 250);
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(cfg.rescue_interval + jitter) => {}
        }
        match store.rescue_expired(100, cfg.policy).await {
            Ok(0) => {}
            Ok(n) => {
                tracing::warn!(rescued = n, "re-queued steps of lost workers");
                wake.notify_one();
            }
            Err(e) => tracing::warn!(error = %e, "rescue scan failed"),
        }
        match store.rescue_expired_decisions(100).await {
            Ok(0) => {}
            Ok(n) => {
                tracing::warn!(rescued = n, "re-queued decisions of lost workers");
                wake.notify_one();
            }
            Err(e) => tracing::warn!(error = %e, "decision rescue scan failed"),
        }
    }
}

/// Outcome of running a step's tool(s).
struct Ran {
    tool: String,
    parameters: Value,
    result: Result<ToolOutput, ToolFailure>,
}

/// Run a claimed step and record its outcome; returns the decision that outcome started
/// (a step reflection or an evaluation), leased to this worker.
async fn execute(
    store: &Store,
    runner: &ToolRunner,
    completer: &Completer,
    cfg: &WorkerConfig,
    step: ClaimedStep,
) -> Option<ClaimedDecision> {
    let ran = run_step(store, runner, &step).await;
    let fence = step.fence();
    let outcome = match ran.result {
        Ok(out) => {
            let s = StepSuccess {
                fence,
                worker_id: cfg.id,
                tool: ran.tool,
                parameters: ran.parameters,
                output: out.output,
                output_params: out.output_params,
            };
            completer.complete(s).await.map(|d| ("succeeded", d))
        }
        Err(failure) => {
            let f = StepFailure {
                fence,
                worker_id: cfg.id,
                tool: ran.tool,
                parameters: ran.parameters,
                failure,
            };
            with_retries(|| store.fail_step(&f, cfg.policy))
                .await
                .map(|o| ("failed", o.decision))
        }
    };
    match outcome {
        Ok((what, next)) => {
            tracing::debug!(step = %step.step_key, task = %step.task_id, what, "step recorded");
            next
        }
        Err(StoreError::Fenced) => {
            tracing::warn!(
                step = %step.step_key, task = %step.task_id,
                "lease was taken over while the step ran; outcome discarded"
            );
            None
        }
        Err(e) => {
            tracing::error!(
                step = %step.step_key, task = %step.task_id, error = %e,
                "could not record the outcome; the lease will expire and the step be rescued"
            );
            None
        }
    }
}

/// Run a decision chain to its end outside the worker loop (tests, tools).
pub async fn run_decision_chain(store: &Store, cfg: &WorkerConfig, first: Option<ClaimedDecision>) {
    run_decisions(store, cfg, &InFlight::default(), first).await
}

/// Run a decision and whatever decisions its outcome starts, one after the other.
async fn run_decisions(
    store: &Store,
    cfg: &WorkerConfig,
    in_flight: &InFlight,
    mut next: Option<ClaimedDecision>,
) {
    while let Some(d) = next.take() {
        in_flight
            .lock()
            .expect("in-flight lock")
            .insert(d.id, Held::Decision(d.fence()));
        let result = decide_and_apply(store, cfg, &d).await;
        in_flight.lock().expect("in-flight lock").remove(&d.id);
        match result {
            Ok(n) => next = n,
            Err(StoreError::Fenced) => tracing::warn!(
                decision = %d.id, kind = %d.kind,
                "decision lease was taken over; outcome discarded"
            ),
            Err(e) => tracing::error!(
                decision = %d.id, kind = %d.kind, error = %e,
                "could not apply the decision; its lease will expire and it will be retried"
            ),
        }
    }
}

/// Load the context, ask the brain (no transaction open), apply the outcome (fenced).
async fn decide_and_apply(
    store: &Store,
    cfg: &WorkerConfig,
    d: &ClaimedDecision,
) -> Result<Option<ClaimedDecision>, StoreError> {
    if d.kind == DecisionKind::Plan {
        store.start_planning(d.task_id).await?;
    }
    let ctx = store.decision_context(d, cfg.policy.max_rescues).await?;
    let skip_brain = d.rescue_count >= cfg.policy.max_rescues;
    let outcome = brain::decide(cfg.brain.as_ref(), &ctx, d.kind, skip_brain).await;
    let lease = Lease {
        worker_id: cfg.id,
        lease_secs: cfg.lease.as_secs_f64(),
    };
    let fence = d.fence();
    let calls = ctx.meter.take();
    if let Err(e) = with_retries(|| store.record_llm_calls(&fence, &calls)).await {
        tracing::error!(decision = %d.id, error = %e, calls = calls.len(), "could not record LLM usage");
    }
    with_retries(|| store.apply_decision(&fence, &outcome, &cfg.policy, lease)).await
}

/// Retry transient database errors a few times; a fenced answer is final.
async fn with_retries<T, F, Fut>(mut f: F) -> Result<T, StoreError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, StoreError>>,
{
    let mut delay = Duration::from_millis(50);
    for _ in 0..5 {
        match f().await {
            Err(StoreError::Db(e)) => {
                tracing::warn!(error = %e, "database error recording an outcome; retrying");
                tokio::time::sleep(delay).await;
                delay *= 2;
            }
            other => return other,
        }
    }
    f().await
}

async fn run_step(store: &Store, runner: &ToolRunner, step: &ClaimedStep) -> Ran {
    let mut parameters = step.parameters.clone();
    params::merge_overrides(&mut parameters, &step.param_overrides);
    let actions: Vec<ActionSpec> = serde_json::from_value(step.actions.clone()).unwrap_or_default();
    let fail = |tool: &str, parameters: Value, f: ToolFailure| Ran {
        tool: tool.to_string(),
        parameters,
        result: Err(f),
    };

    // What the placeholders and tools need, loaded in one go.
    let mut keys = HashSet::new();
    let mut tool_ids: Vec<String> = actions.iter().map(|a| a.tool.clone()).collect();
    if !step.tool.is_empty() {
        tool_ids.push(step.tool.clone());
    }
    for v in std::iter::once(&parameters).chain(actions.iter().map(|a| &a.parameters)) {
        match plan::references(v) {
            Ok(refs) => keys.extend(refs.into_iter().filter_map(|r| match r {
                Reference::Step { key, .. } => Some(key),
                _ => None,
            })),
            Err(e) => return fail(&step.tool, parameters, param_error(e.message)),
        }
    }
    let keys: Vec<String> = keys.into_iter().collect();
    let ctx = match store
        .step_context(step.task_id, step.plan_version, &keys, &tool_ids)
        .await
    {
        Ok(c) => c,
        Err(e) => {
            return fail(
                &step.tool,
                parameters,
                ToolFailure::new(
                    "tool_error",
                    format!("could not load the step's context: {e}"),
                    true,
                ),
            );
        }
    };

    // Actions run in parallel; the step's own tool may read their outputs.
    let mut action_outputs: HashMap<String, Value> = HashMap::new();
    let mut output_params = Map::new();
    if !actions.is_empty() {
        let scope = Scope {
            steps: &ctx.outputs,
            metadata: &ctx.metadata,
            actions: None,
        };
        let calls = actions.iter().map(|a| {
            let scope = &scope;
            let ctx = &ctx;
            async move {
                let Some(tool) = ctx.tools.get(&a.tool) else {
                    return (a, Value::Null, Err(unknown_tool(&a.tool)));
                };
                let mut p = match params::resolve(&a.parameters, scope) {
                    Ok(p) => p,
                    Err(e) => return (a, a.parameters.clone(), Err(param_error(e.0))),
                };
                params::fill_from_metadata(&mut p, &tool.input_schema, &ctx.metadata);
                let key = format!("{}.{}", step.step_key, a.id);
                let r = runner
                    .run(
                        tool,
                        &Invocation {
                            task_id: step.task_id,
                            step_key: &key,
                            attempt: step.attempt,
                            parameters: &p,
                        },
                    )
                    .await;
                (a, p, r)
            }
        });
        let results = join_all(calls).await;
        let mut action_params = Map::new();
        let mut first_failure = None;
        for (a, p, r) in results {
            action_params.insert(a.id.clone(), p);
            match r {
                Ok(out) => {
                    output_params.extend(out.output_params);
                    action_outputs.insert(a.id.clone(), out.output);
                }
                Err(mut f) => {
                    if first_failure.is_none() {
                        f.message = format!("action {}: {}", a.id, f.message);
                        first_failure = Some(f);
                    }
                }
            }
        }
        if let Some(f) = first_failure {
            return fail(&step.tool, json!({ "actions": action_params }), f);
        }
        if step.tool.is_empty() {
            return Ran {
                tool: String::new(),
                parameters: json!({ "actions": action_params }),
                result: Ok(ToolOutput {
                    output: Value::Object(action_outputs.into_iter().collect()),
                    output_params,
                }),
            };
        }
    }

    let Some(tool) = ctx.tools.get(&step.tool) else {
        return fail(&step.tool, parameters, unknown_tool(&step.tool));
    };
    let scope = Scope {
        steps: &ctx.outputs,
        metadata: &ctx.metadata,
        actions: Some(&action_outputs),
    };
    let mut resolved = match params::resolve(&parameters, &scope) {
        Ok(p) => p,
        Err(e) => return fail(&step.tool, parameters, param_error(e.0)),
    };
    params::fill_from_metadata(&mut resolved, &tool.input_schema, &ctx.metadata);
    let result = runner
        .run(
            tool,
            &Invocation {
                task_id: step.task_id,
                step_key: &step.step_key,
                attempt: step.attempt,
                parameters: &resolved,
            },
        )
        .await
        .map(|mut out| {
            output_params.extend(std::mem::take(&mut out.output_params));
            out.output_params = output_params;
            out
        });
    Ran {
        tool: step.tool.clone(),
        parameters: resolved,
        result,
    }
}

fn param_error(message: String) -> ToolFailure {
    ToolFailure::new("parameter_error", message, false)
}

fn unknown_tool(id: &str) -> ToolFailure {
    ToolFailure::new(
        "tool_error",
        format!("tool {id:?} is not registered"),
        false,
    )
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .or_else(|_| std::env::var("HOSTNAME"))
        .unwrap_or_else(|_| "unknown".into())
}
