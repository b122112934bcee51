//! Acceptance (issue 3) 3: a worker that dies between a failure and its decision — at every
//! decision of a full recovery — loses nothing and double-counts nothing: after another worker
//! takes over, the counters equal those of an uninterrupted run.

use trellis::testkit as common;

use std::sync::Arc;
use std::time::Duration;

use common::{ToolServer, register_tool, spawn_app};
use serde_json::json;
use trellis::brain::{self, rules::RulesBrain};
use trellis::domain::ToolFailure;
use trellis::store::decision_queue::Lease;
use trellis::store::step_queue::{Claim, FailurePolicy, StepFailure};
use trellis::store::testing::RecoveryFingerprint;
use trellis::testkit::wait_for;
use uuid::Uuid;

const LIMIT: Duration = Duration::from_secs(60);

/// No backoff, no circuit breaker: the recovery tiers alone, fast.
const POLICY: FailurePolicy = FailurePolicy::fixed(0, 3, 30.0);

/// A dead HTTP tool without alternative: the longest recovery the rules brain takes
/// (retries, a repair that keeps the step, overall reflection, replan, retries, overall
/// reflection, stop).
fn task() -> serde_json::Value {
    json!({"description": "dead tool", "plan": {"steps": [{"id": "step_1", "tool": "dead"}]}})
}

async fn uninterrupted() -> RecoveryFingerprint {
    let app = spawn_app().await;
    let server = ToolServer::start(Duration::ZERO, Arc::new(|_| (503, json!({})))).await;
    register_tool(&app, "dead", &server.endpoint("dead"), json!({})).await;
    let w = app.worker(|c| c.policy = POLICY);
    let id = app.submit(task()).await;
    app.wait_done(id, LIMIT).await;
    w.stop().await;
    app.store().recovery_fingerprint(id).await.unwrap()
}

/// A ghost worker runs the task by hand and dies holding decision number `abandon_at`;
/// a real worker then rescues that decision and finishes the task.
async fn interrupted(abandon_at: usize) -> (RecoveryFingerprint, usize) {
    let app = spawn_app().await;
    let server = ToolServer::start(Duration::ZERO, Arc::new(|_| (503, json!({})))).await;
    register_tool(&app, "dead", &server.endpoint("dead"), json!({})).await;
    let store = app.store().clone();
    let id = app.submit(task()).await;
    let ghost = Uuid::now_v7();
    let policy = POLICY;
    let lease = Lease {
        worker_id: ghost,
        lease_secs: 30.0,
    };
    let mut decisions = 0;
    'ghost: loop {
        let claimed = store
            .claim_steps(&Claim {
                worker_id: ghost,
                limit: 1,
                lease_secs: 30.0,
                max_running_tasks: 0,
            })
            .await
            .unwrap();
        let Some(step) = claimed.into_iter().next() else {
            break;
        };
        let mut failure = ToolFailure::new("tool_error", "HTTP 503 Service Unavailable", true);
        failure.http_status = Some(503);
        let out = store
            .fail_step(
                &StepFailure {
                    fence: step.fence(),
                    worker_id: ghost,
                    tool: step.tool.clone(),
                    parameters: json!({}),
                    failure,
                    idempotency_key: None,
                },
                policy,
            )
            .await
            .unwrap();
        let mut next = out.decision;
        while let Some(d) = next.take() {
            if decisions == abandon_at {
                // the ghost dies here: its decision lease will expire
                break 'ghost;
            }
            decisions += 1;
            let ctx = store.decision_context(&d, 3).await.unwrap();
            let outcome = brain::decide(&RulesBrain, &ctx, d.kind, false).await;
            next = store
                .apply_decision(&d.fence(), &outcome, &policy, lease)
                .await
                .unwrap();
        }
        if store.get_task(id).await.unwrap().status != "running" {
            break;
        }
    }
    let abandoned = store.expire_decision_leases(id).await.unwrap();
    let w = app.worker(|c| {
        c.rescue_interval = Duration::from_millis(50);
        c.policy = POLICY;
    });
    wait_for("the task to end", LIMIT, || async {
        let t = store.get_task(id).await.unwrap();
        matches!(
            t.status.as_str(),
            "needs_intervention" | "failed" | "succeeded"
        )
        .then_some(())
    })
    .await;
    w.stop().await;
    let counts = store.decision_counts(id).await.unwrap();
    assert_eq!(counts.get("running"), None, "no decision left running");
    assert_eq!(counts.get("pending"), None, "no decision left pending");
    (
        store.recovery_fingerprint(id).await.unwrap(),
        abandoned as usize,
    )
}

#[tokio::test]
async fn a_worker_dying_at_any_decision_changes_no_counter() {
    let expected = uninterrupted().await;
    assert_eq!(expected.status, "needs_intervention");
    assert_eq!(
        (
            expected.task_replan_count,
            expected.single_step_repair_count
        ),
        (1, 1)
    );
    assert_eq!(expected.tool_failures, 7);
    let total_decisions = 11;
    for abandon_at in 0..total_decisions {
        let (got, abandoned) = interrupted(abandon_at).await;
        assert_eq!(abandoned, 1, "the ghost died holding decision {abandon_at}");
        assert_eq!(
            got, expected,
            "dying at decision {abandon_at} changed the outcome"
        );
    }
    // past the last decision there is nothing to abandon: the ghost finished alone
    let (got, abandoned) = interrupted(total_decisions).await;
    assert_eq!((abandoned, got), (0, expected));
}
