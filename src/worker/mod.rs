//! The worker runtime: claim ready steps and decisions in batches, run them concurrently with
//! no transaction open, record outcomes (fenced), heartbeat leases, rescue the work of dead
//! workers, drain on shutdown.
//!
//! - this module: [`WorkerConfig`] and [`run`], the claim loop and the drain;
//! - `completer`: batched completions (one transaction per batch);
//! - `execute`: running one claimed step (actions, placeholders, the gate of a failing
//!   tool) and recording it; `call`: one tool call and what it runs with (context, keys,
//!   secrets, the output's checks);
//! - `decisions`: running a decision chain (context → brain → apply);
//! - `maintenance`: the listen, heartbeat and rescue loops, on `sweep` (what they work with:
//!   the store, the wake-ups, the fleet's pace); `tool_cache`: tool definitions;
//! - `maps`: a claimed map step expanded; `agent`: an agent step's turn; `waits`: tools that wait; `cancel`: cancelling a
//!   call in flight; `webhooks`: delivering the outbox.
//!
//! Built on tokio `JoinSet` + `Semaphore` + `CancellationToken` rather than apalis; see
//! `docs/internals.md` ("Around the core", why not apalis) for the reasons.
//!
//! Architecture invariant: no transaction is open while a tool or an LLM runs.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore, mpsc};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;
use uuid::Uuid;

use crate::brain::{self, Brain};
use crate::config::Settings;
use crate::domain::circuit::Breaker;
use crate::domain::recovery::RetryPolicy;
use crate::store::decision_queue::DecisionFence;
use crate::store::step_queue::{Claim, ClaimedStep, FailurePolicy, InlineEvaluation, StepLease};
use crate::store::workers::WorkerInfo;
use crate::store::{Store, StoreError};
use crate::tools::ToolRunner;

mod agent;
mod call;
mod cancel;
mod completer;
mod decisions;
mod execute;
mod maintenance;
mod maps;
mod sweep;
mod tool_cache;
mod waits;
mod webhooks;

pub use completer::Completer;
pub use decisions::run_decision_chain;

#[derive(Debug, Clone)]
pub struct WorkerConfig {
    pub id: Uuid,
    pub concurrency: usize,
    pub lease: Duration,
    /// How often leases are renewed (`[worker] heartbeat_secs`, default a third of the lease).
    pub heartbeat: Duration,
    pub poll: Duration,
    pub claim_batch: usize,
    pub shutdown_grace: Duration,
    pub rescue_interval: Duration,
    pub policy: FailurePolicy,
    pub brain: Arc<dyn Brain>,
    /// The endpoint an `agent` step's turns ask (`[llm]`; none: an agent step fails at once).
    pub agent_llm: Option<Arc<crate::brain::llm::LlmClient>>,
    pub retention: Retention,
    /// Where tools may connect, and how much of an answer is read.
    pub outbound: crate::net::Outbound,
    /// `[orchestrator] max_concurrent_tasks` (0: no cap).
    pub max_running_tasks: i64,
    /// Where an async tool calls back (`…/api/v1/callbacks/{token}` is appended).
    pub callback_base_url: String,
    /// How long an async tool's step waits for its callback.
    pub async_timeout_secs: f64,
    /// How often waits whose time has come are looked for.
    pub wait_check: Duration,
    /// Webhook deliveries: signing, tries, backoff.
    pub webhooks: crate::config::WebhookSettings,
    /// Opens the secrets tools' headers name (`[secrets] key`).
    pub secret_box: Option<crate::secretbox::SecretBox>,
    /// `[limits] max_steps_per_plan` and `max_map_items`: the most items a map runs, and what a
    /// child task's plan is held to.
    pub plan_bounds: crate::domain::plan::Bounds,
    /// `[limits] max_child_depth` and `max_descendants`: how far a tree of child tasks grows.
    pub tree: crate::domain::child::TreeLimits,
    /// `[limits] child_intervention_wait_secs`: how long a parent's step waits on a child
    /// stopped in `needs_intervention`.
    pub child_intervention_wait_secs: f64,
    /// Priority aging (`[fairness]`): none when `aging_interval_secs` is 0.
    pub aging: Option<Aging>,
    /// Bulk actions: tasks per batch, and how often to look for one.
    pub bulk_batch: i64,
    pub bulk_poll: Duration,
    /// A task that has spent this fraction of its `max_cost` gets a `cost_warning`.
    pub cost_warn_fraction: f64,
}

/// Priority aging: a queued task rises one level per `interval`, at most `max_boost` levels.
#[derive(Debug, Clone, Copy)]
pub struct Aging {
    pub interval: Duration,
    pub max_boost: u32,
}

/// What the maintenance deletes ([`Store::prune_finished`]).
#[derive(Debug, Clone, Copy)]
pub struct Retention {
    /// 0: keep everything.
    pub finished_task_ttl_secs: u64,
    pub batch_size: i64,
    pub interval: Duration,
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
            heartbeat: w
                .heartbeat_secs
                .map(Duration::from_secs_f64)
                .unwrap_or(Duration::from_secs(w.lease_secs) / 3),
            poll: Duration::from_millis(w.poll_ms),
            claim_batch: w
                .claim_batch
                .map_or(w.concurrency, |b| b.min(w.concurrency)) as usize,
            shutdown_grace: Duration::from_secs(w.shutdown_grace_secs),
            rescue_interval: Duration::from_millis(w.rescue_interval_ms),
            policy: FailurePolicy {
                retry: RetryPolicy {
                    initial_interval_ms: w.retry_backoff_ms,
                    backoff_coefficient: w.retry_backoff_coefficient,
                    max_interval_ms: w.retry_backoff_max_ms,
                    max_attempts: None,
                    max_elapsed_ms: (w.retry_max_elapsed_secs > 0.0)
                        .then_some((w.retry_max_elapsed_secs * 1000.0) as u64),
                    max_retry_after_ms: w.max_retry_after_secs.saturating_mul(1000),
                },
                breaker: Breaker {
                    failure_threshold: w.circuit_failure_threshold.min(i32::MAX as u32) as i32,
                    cool_down_ms: (w.circuit_cool_down_secs * 1000.0) as i64,
                    confirm_failures: w.circuit_confirm_failures as i32,
                },
                max_rescues: w.max_rescues as i32,
                lease_secs: w.lease_secs as f64,
                max_wait_ms: (w.tool_wait_max_secs * 1000.0) as u64,
            },
            brain: brain::from_settings(s),
            agent_llm: crate::brain::llm::LlmConfig::from_settings(&s.llm)
                .map(|c| Arc::new(crate::brain::llm::LlmClient::new(c))),
            retention: Retention {
                finished_task_ttl_secs: s.retention.finished_task_ttl_secs,
                batch_size: i64::from(s.retention.batch_size),
                interval: Duration::from_secs(s.retention.interval_secs),
            },
            outbound: crate::net::Outbound::from_settings(&s.tools),
            max_running_tasks: i64::from(s.orchestrator.max_concurrent_tasks),
            callback_base_url: w
                .callback_base_url
                .clone()
                .unwrap_or_else(|| format!("http://{}:{}", s.server.host, s.server.port))
                .trim_end_matches('/')
                .to_string(),
            async_timeout_secs: w.async_timeout_secs,
            wait_check: Duration::from_millis(w.wait_check_ms),
            webhooks: s.webhooks.clone(),
            secret_box: crate::secretbox::SecretBox::from_settings(s.secrets.key.as_deref())
                .ok()
                .flatten(),
            plan_bounds: s.limits.plan_bounds(),
            tree: crate::domain::child::TreeLimits {
                max_depth: s.limits.max_child_depth as i32,
                max_descendants: s.limits.max_descendants as i32,
            },
            child_intervention_wait_secs: s.limits.child_intervention_wait_secs as f64,
            bulk_batch: i64::from(s.bulk_actions.batch_size),
            bulk_poll: Duration::from_millis(s.bulk_actions.poll_ms),
            cost_warn_fraction: s.limits.cost_warn_fraction,
            aging: (s.fairness.aging_interval_secs > 0).then(|| Aging {
                interval: Duration::from_secs(s.fairness.aging_interval_secs),
                max_boost: s.fairness.aging_max_boost,
            }),
        }
    }
}

/// A lease this worker holds.
#[derive(Debug, Clone, Copy)]
enum Held {
    Step(StepLease),
    Decision(DecisionFence),
}

/// Leases of the work this worker is still running (or recording): the heartbeat renews
/// these and nothing else, and a drain releases what did not finish. Work leaves the set when
/// its outcome is recorded, or when recording failed: its lease then runs out and another
/// worker takes it.
type InFlight = Arc<Mutex<HashMap<Uuid, Held>>>;

/// What the claim loop shares with the work it spawns.
#[derive(Clone)]
struct Runtime {
    store: Store,
    cfg: WorkerConfig,
    runner: ToolRunner,
    completer: Completer,
    in_flight: InFlight,
    /// Abort tokens of the running steps (the heartbeat cancels a cancelled task's).
    aborts: cancel::Aborts,
    tools: tool_cache::ToolCache,
    /// Derives each call's idempotency key (the deployment's secret).
    keys: crate::domain::call_key::CallKeys,
}

/// Run a worker until `shutdown` is cancelled, then drain: no new claims; in-flight steps get
/// `shutdown_grace` to finish, the rest are released without burning an attempt.
pub async fn run(
    store: Store,
    cfg: WorkerConfig,
    shutdown: CancellationToken,
) -> Result<(), StoreError> {
    crate::metrics::handle();
    let secret = store
        .register_worker(&WorkerInfo {
            id: cfg.id,
            host: hostname(),
            pid: std::process::id() as i32,
            concurrency: cfg.concurrency as i32,
            lease_secs: cfg.lease.as_secs_f64(),
        })
        .await?;
    tracing::info!(worker_id = %cfg.id, concurrency = cfg.concurrency, "worker started");

    let background = CancellationToken::new();
    let wake = sweep::Wake {
        notify: Arc::new(Notify::new()),
        // a decision may be pending from before this worker started
        decisions: Arc::new(AtomicBool::new(true)),
    };
    let in_flight: InFlight = Arc::default();
    let aborts: cancel::Aborts = Arc::default();
    // one pool for everything: the claims, completions, failures and decisions open their
    // transactions with the hot planner settings (`in_tx!(hot …)`), the rest plainly
    let mut helpers = maintenance::spawn(&store, &cfg, &wake, (&in_flight, &aborts), &background);
    let (handoff, mut handoffs) = mpsc::unbounded_channel();
    let (completer, completer_task) = Completer::start(
        store.clone(),
        completer::CompleterConfig {
            worker_id: cfg.id,
            lease_secs: cfg.lease.as_secs_f64(),
            max_running_tasks: cfg.max_running_tasks,
            inline: cfg
                .brain
                .pure_evaluation()
                .map(|evaluate| InlineEvaluation {
                    evaluate,
                    policy: cfg.policy,
                }),
            cost_warn_fraction: cfg.cost_warn_fraction,
            in_flight: in_flight.clone(),
            handoff,
            shutdown: shutdown.clone(),
        },
    );
    let rt = Runtime {
        store: store.clone(),
        cfg: cfg.clone(),
        runner: ToolRunner::new(cfg.outbound.clone()),
        completer,
        in_flight,
        aborts,
        tools: tool_cache::ToolCache::default(),
        keys: crate::domain::call_key::CallKeys::new(secret),
    };
    let mut running: JoinSet<()> = JoinSet::new();
    claim_loop(&rt, &mut running, &mut handoffs, &wake, &shutdown).await;

    tracing::info!(worker_id = %cfg.id, in_flight = running.len(), "draining");
    let drained = drain(&rt, &mut running).await;
    background.cancel();
    while helpers.join_next().await.is_some() {}
    let in_flight = rt.in_flight.clone();
    drop(rt);
    let _ = completer_task.await;
    // a cycle that was committing when the drain gave up may have claimed steps since
    release_in_flight(&store, cfg.id, &in_flight).await;
    store.stop_worker(cfg.id).await?;
    tracing::info!(worker_id = %cfg.id, drained, "worker stopped");
    Ok(())
}

/// Claim while permits are free, and run the steps completion cycles claimed, until shutdown.
async fn claim_loop(
    rt: &Runtime,
    running: &mut JoinSet<()>,
    handoffs: &mut mpsc::UnboundedReceiver<completer::Handoff>,
    wake: &sweep::Wake,
    shutdown: &CancellationToken,
) {
    let sem = Arc::new(Semaphore::new(rt.cfg.concurrency));
    let mut decisions_polled = Instant::now();
    loop {
        while running.try_join_next().is_some() {}
        let first = tokio::select! {
            biased;
            _ = shutdown.cancelled() => break,
            Some((step, permit)) = handoffs.recv() => {
                spawn_step(rt, running, step, permit);
                continue;
            }
            p = sem.clone().acquire_owned() => p.expect("semaphore is never closed"),
        };
        let mut permits = vec![first];
        while permits.len() < rt.cfg.claim_batch {
            match sem.clone().try_acquire_owned() {
                Ok(p) => permits.push(p),
                Err(_) => break,
            }
        }
        let wanted = permits.len();
        // Never cancelled midway: a claim that committed must reach the in-flight set.
        // decisions when one may be pending (a notification said so) or at the poll interval
        let ask_decisions = wake.decisions.swap(false, Ordering::AcqRel)
            || decisions_polled.elapsed() >= rt.cfg.poll;
        let decided = if ask_decisions {
            decisions_polled = Instant::now();
            let r = claim_decisions(rt, running, &mut permits).await;
            if r.is_err() {
                wake.decisions.store(true, Ordering::Release);
            }
            r
        } else {
            Ok(())
        };
        let claimed = match decided {
            Ok(()) => claim_steps(rt, running, &mut permits).await,
            // as before a failed decision claim: no step claim this round, back off
            Err(()) => Err(()),
        };
        let got = wanted - permits.len();
        drop(permits);
        let wait = match claimed {
            Err(()) => Some(rt.cfg.poll.min(Duration::from_secs(1))),
            Ok(next_due) if got < wanted => Some(idle_for(&rt.cfg, next_due)),
            Ok(_) => None,
        };
        if let Some(wait) = wait {
            // a step a completion cycle claimed starts at once, not after the wait
            tokio::select! {
                _ = shutdown.cancelled() => {}
                Some((step, permit)) = handoffs.recv() => spawn_step(rt, running, step, permit),
                _ = wake.notify.notified(), if claimed.is_ok() => {}
                _ = tokio::time::sleep(wait) => {}
            }
        }
    }
}

/// Claim pending decisions (one per permit) and run each chain.
async fn claim_decisions(
    rt: &Runtime,
    running: &mut JoinSet<()>,
    permits: &mut Vec<OwnedSemaphorePermit>,
) -> Result<(), ()> {
    let lease = rt.cfg.lease.as_secs_f64();
    match rt
        .store
        .claim_decisions(rt.cfg.id, permits.len() as i64, lease)
        .await
    {
        Ok(claimed) => {
            for d in claimed {
                let permit = permits
                    .pop()
                    .expect("claimed at most one decision per permit");
                let rt = rt.clone();
                let span = tracing::info_span!("task", task_id = %d.task_id);
                running.spawn(
                    async move {
                        decisions::run(&rt.store, &rt.cfg, &rt.in_flight, Some(d)).await;
                        drop(permit);
                    }
                    .instrument(span),
                );
            }
            Ok(())
        }
        Err(e) => {
            tracing::warn!(error = %e, "claiming decisions failed; retrying");
            Err(())
        }
    }
}

/// Claim ready steps with the permits left (one per permit) and run each. When it got fewer
/// than it asked for: the milliseconds until the next step in backoff falls due, if any.
async fn claim_steps(
    rt: &Runtime,
    running: &mut JoinSet<()>,
    permits: &mut Vec<OwnedSemaphorePermit>,
) -> Result<Option<f64>, ()> {
    if permits.is_empty() {
        return Ok(None);
    }
    let claim = Claim {
        worker_id: rt.cfg.id,
        limit: permits.len() as i64,
        lease_secs: rt.cfg.lease.as_secs_f64(),
        max_running_tasks: rt.cfg.max_running_tasks,
    };
    let began = std::time::Instant::now();
    let claimed = rt.store.claim_steps_or_next_due(&claim).await;
    metrics::histogram!(crate::metrics::CLAIM_SECONDS).record(began.elapsed().as_secs_f64());
    match claimed {
        Ok((steps, next_due)) => {
            if !steps.is_empty() {
                metrics::histogram!(crate::metrics::CLAIM_BATCH).record(steps.len() as f64);
            }
            for step in steps {
                let permit = permits.pop().expect("claimed at most one step per permit");
                rt.in_flight
                    .lock()
                    .expect("in-flight lock")
                    .insert(step.id, Held::Step(step.fence()));
                spawn_step(rt, running, step, permit);
            }
            Ok(next_due)
        }
        Err(e) => {
            tracing::warn!(error = %e, "claiming steps failed; retrying");
            Err(())
        }
    }
}

/// Run a claimed step (already in the in-flight set) under its permit, then the decisions its
/// outcome starts.
fn spawn_step(
    rt: &Runtime,
    running: &mut JoinSet<()>,
    step: ClaimedStep,
    permit: OwnedSemaphorePermit,
) {
    let rt = rt.clone();
    let lag = (step.started_at - step.due_at)
        .num_microseconds()
        .unwrap_or(0) as f64
        / 1e6;
    metrics::histogram!(crate::metrics::QUEUE_LAG_SECONDS).record(lag.max(0.0));
    // task → step → attempt: what the step logs (and the LLM calls of the decisions its
    // outcome leads to) carries all three
    let task = tracing::info_span!("task", task_id = %step.task_id);
    let step_span =
        tracing::info_span!(parent: &task, "step", step_id = %step.step_key, tool = %step.tool);
    let attempt = tracing::info_span!(parent: &step_span, "attempt", attempt = step.attempt);
    // every running step holds one such task: keep it small (what only some steps need, a
    // failure's transaction and a decision, is boxed where it starts; 3 KB instead of 18 KB)
    running.spawn(
        async move {
            let id = step.id;
            let (next, permit) = execute::execute(&rt, step, permit).await;
            rt.in_flight.lock().expect("in-flight lock").remove(&id);
            cancel::forget(&rt, id);
            decisions::run(&rt.store, &rt.cfg, &rt.in_flight, next).await;
            drop(permit);
        }
        .instrument(attempt),
    );
}

/// Give running work `shutdown_grace` to finish; release what is left (no attempt burnt).
/// True when everything finished in time.
async fn drain(rt: &Runtime, running: &mut JoinSet<()>) -> bool {
    let drained = tokio::time::timeout(rt.cfg.shutdown_grace, async {
        while running.join_next().await.is_some() {}
    })
    .await
    .is_ok();
    if !drained {
        running.abort_all();
        while running.join_next().await.is_some() {}
    }
    // what did not finish, and steps a last completion cycle claimed but nobody ran
    release_in_flight(&rt.store, rt.cfg.id, &rt.in_flight).await;
    drained
}

/// Give back every lease still in the in-flight set (no attempt burnt).
async fn release_in_flight(store: &Store, worker_id: Uuid, in_flight: &InFlight) {
    let left: Vec<Held> = in_flight
        .lock()
        .expect("in-flight lock")
        .drain()
        .map(|(_, h)| h)
        .collect();
    for held in left {
        let r = match held {
            Held::Step(fence) => store.release_step(&fence, worker_id).await,
            Held::Decision(fence) => store.release_decision(&fence).await,
        };
        match r {
            Ok(()) | Err(StoreError::Fenced) => {}
            Err(e) => tracing::warn!(error = %e, "release failed; the lease will expire"),
        }
    }
}

/// How long an idle claim loop waits (unless a notification, a handed-off step or shutdown
/// comes first): until the next retry falls due (`next_due` ms), at most the poll period.
fn idle_for(cfg: &WorkerConfig, next_due: Option<f64>) -> Duration {
    match next_due {
        Some(ms) => cfg
            .poll
            .min(Duration::from_millis(ms.max(1.0).ceil() as u64)),
        None => cfg.poll,
    }
}

/// Retry transient database errors a few times; a fenced answer is final.
pub(crate) async fn with_retries<T, F, Fut>(mut f: F) -> Result<T, StoreError>
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

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .or_else(|_| std::env::var("HOSTNAME"))
        .unwrap_or_else(|_| "unknown".into())
}
