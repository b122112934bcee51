//! The step queue under contention: fencing, exactly-once claims, rescue of lost workers.

use trellis::testkit as common;

use std::time::Duration;

use serde_json::{Value, json};
use trellis::store::step_queue::{Claim, FailurePolicy, StepSuccess};
use trellis::store::{Store, StoreError};
use trellis::testkit::{fresh_db, wait_for};
use trellis::worker::WorkerConfig;
use uuid::Uuid;

const POLICY: FailurePolicy = common::TEST_POLICY;

fn claim(worker: Uuid, limit: i64) -> Claim {
    Claim {
        worker_id: worker,
        limit,
        lease_secs: 30.0,
        max_running_tasks: 0,
    }
}

/// Acceptance 5: a worker whose lease was taken over (expired in SQL, rescued, re-claimed)
/// cannot complete, fail or release the step, nor extend the new lease.
#[tokio::test]
async fn a_taken_over_lease_changes_nothing() {
    let db = fresh_db().await;
    let store = &db.store;
    let t = store
        .submit_task(&common::new_task(json!([{"id": "s", "tool": "echo"}])))
        .await
        .unwrap();
    let (a, b) = (Uuid::now_v7(), Uuid::now_v7());

    let held_by_a = store.claim_steps(&claim(a, 10)).await.unwrap();
    assert_eq!(held_by_a.len(), 1);
    let old = held_by_a[0].clone();
    assert!(
        store.claim_steps(&claim(b, 10)).await.unwrap().is_empty(),
        "a running step is not claimable"
    );

    assert_eq!(store.expire_lease(old.id).await.unwrap(), 1);
    assert_eq!(store.rescue_expired(10, POLICY).await.unwrap(), 1);
    let held_by_b = store.claim_steps(&claim(b, 10)).await.unwrap();
    assert_eq!(held_by_b.len(), 1);
    let new = held_by_b[0].clone();
    assert!(new.lease_token > old.lease_token);
    assert_eq!(new.attempt, 2, "the lost run counted as attempt 1");

    let steps_before = store.list_steps(t.task_id).await.unwrap();
    common::assert_zombie_changes_nothing(store, &old, a).await;
    let steps_after = store.list_steps(t.task_id).await.unwrap();
    assert_eq!(steps_after[0].status, "running");
    assert_eq!(steps_after[0].lease_owner, Some(b));
    assert_eq!(steps_after[0].lease_token, steps_before[0].lease_token);
    assert_eq!(steps_after[0].output, None);

    // the rightful holder completes
    let ok = StepSuccess {
        cost: None,
        fence: new.fence(),
        worker_id: b,
        tool: "echo".into(),
        parameters: json!({}),
        output: json!({"zombie": true}),
        output_params: Default::default(),
        idempotency_key: None,
    };
    // the evaluation it starts is leased to the completing worker
    let evaluation = store.complete_step(&ok, 30.0).await.unwrap();
    assert_eq!(
        store.get_task(t.task_id).await.unwrap().status,
        "evaluating"
    );
    let cfg = WorkerConfig::from_settings(&common::test_settings());
    trellis::worker::run_decision_chain(store, &cfg, evaluation).await;
    assert_eq!(store.get_task(t.task_id).await.unwrap().status, "succeeded");
    let attempts = store
        .list_attempts(t.task_id, trellis::store::Page::ALL)
        .await
        .unwrap();
    assert_eq!(attempts.len(), 2);
    assert_eq!(attempts[0].error_category.as_deref(), Some("worker_lost"));
    assert_eq!(attempts[0].worker_id, Some(a));
    assert_eq!(attempts[1].worker_id, Some(b));
}

/// Rescue re-queues a lost worker's step at once; after three losses the step is poison.
#[tokio::test]
async fn lost_steps_are_rescued_until_poison() {
    let db = fresh_db().await;
    let store = &db.store;
    let t = store
        .submit_task(&common::new_task(json!([{"id": "s", "tool": "echo"}])))
        .await
        .unwrap();
    for round in 1..=3 {
        let held = store.claim_steps(&claim(Uuid::now_v7(), 1)).await.unwrap();
        assert_eq!(held.len(), 1, "round {round}");
        assert_eq!(held[0].attempt, round);
        // a lease that has not expired is not rescued
        assert_eq!(store.rescue_expired(10, POLICY).await.unwrap(), 0);
        store.expire_lease(held[0].id).await.unwrap();
        assert_eq!(store.rescue_expired(10, POLICY).await.unwrap(), 1);
    }
    let task = store.get_task(t.task_id).await.unwrap();
    assert_eq!(task.status, "failed");
    assert!(
        task.error.unwrap()["reason"]
            .as_str()
            .unwrap()
            .contains("poison")
    );
    let steps = store.list_steps(t.task_id).await.unwrap();
    assert_eq!(
        (
            steps[0].status.as_str(),
            steps[0].rescue_count,
            steps[0].retry_count
        ),
        ("failed", 3, 0)
    );
}

/// A real worker rescues a step whose worker vanished and finishes it.
#[tokio::test]
async fn a_worker_finishes_what_a_vanished_worker_held() {
    let db = fresh_db().await;
    let store = db.store.clone();
    let t = store
        .submit_task(&common::new_task(
            json!([{"id": "s", "tool": "echo", "parameters": {"v": 1}}]),
        ))
        .await
        .unwrap();
    let ghost = Uuid::now_v7();
    let held = store.claim_steps(&claim(ghost, 1)).await.unwrap();
    store.expire_lease(held[0].id).await.unwrap();

    let mut cfg = WorkerConfig::from_settings(&common::test_settings());
    cfg.rescue_interval = Duration::from_millis(50);
    let w = common::TestWorker::start(store.clone(), cfg);
    wait_for("the task to succeed", Duration::from_secs(30), || async {
        (store.get_task(t.task_id).await.unwrap().status == "succeeded").then_some(())
    })
    .await;
    let attempts = store
        .list_attempts(t.task_id, trellis::store::Page::ALL)
        .await
        .unwrap();
    assert_eq!(attempts.len(), 2);
    assert_eq!(
        (attempts[0].status.as_str(), attempts[0].worker_id),
        ("failed", Some(ghost))
    );
    assert_eq!(
        (attempts[1].status.as_str(), attempts[1].worker_id),
        ("succeeded", Some(w.id))
    );
    w.stop().await;
}

async fn submit_many(store: &Store, tasks: usize, steps: usize) {
    for _ in 0..tasks {
        let steps: Vec<Value> = (1..=steps)
            .map(|i| json!({"id": format!("s{i}"), "tool": "echo", "parameters": {"i": i}}))
            .collect();
        store
            .submit_task(&common::new_task(Value::Array(steps)))
            .await
            .unwrap();
    }
}

/// Acceptance 6: 4 workers × 2,000 echo steps — each step claimed exactly once.
#[tokio::test]
async fn four_workers_claim_each_of_2000_steps_exactly_once() {
    let db = fresh_db().await;
    let store = db.store.clone();
    submit_many(&store, 100, 20).await;
    let workers: Vec<_> = (0..4)
        .map(|_| {
            let mut cfg = WorkerConfig::from_settings(&common::test_settings());
            cfg.poll = Duration::from_millis(20);
            common::TestWorker::start(store.clone(), cfg)
        })
        .collect();
    wait_for("100 tasks to succeed", Duration::from_secs(240), || async {
        (store.count_tasks("succeeded").await.unwrap() == 100).then_some(())
    })
    .await;
    let (attempts, succeeded, steps_not_exactly_once, max_token) =
        store.attempt_audit().await.unwrap();
    assert_eq!(attempts, 2000, "one attempt per step");
    assert_eq!(succeeded, 2000);
    assert_eq!(steps_not_exactly_once, 0);
    assert_eq!(max_token, 1, "no step was ever claimed twice");
    for w in workers {
        w.stop().await;
    }
}

/// A batch of completions commits the live ones and skips the one whose lease was taken over.
#[tokio::test]
async fn a_completion_batch_skips_only_the_fenced_step() {
    let db = fresh_db().await;
    let store = &db.store;
    let t = store
        .submit_task(&common::new_task(json!([
            {"id": "a", "tool": "echo"}, {"id": "b", "tool": "echo"}, {"id": "c", "tool": "echo"},
            {"id": "d", "tool": "echo", "dependencies": ["a", "c"]}
        ])))
        .await
        .unwrap();
    let w = Uuid::now_v7();
    let held = store.claim_steps(&claim(w, 10)).await.unwrap();
    assert_eq!(held.len(), 3);
    // b's lease is taken over
    store.expire_lease(held[1].id).await.unwrap();
    store.rescue_expired(10, POLICY).await.unwrap();
    let items: Vec<StepSuccess> = held
        .iter()
        .map(|s| StepSuccess {
            cost: None,
            fence: s.fence(),
            worker_id: w,
            tool: "echo".into(),
            parameters: json!({}),
            output: json!({"from": s.step_key}),
            output_params: serde_json::Map::from_iter([(s.step_key.clone(), json!(1))]),
            idempotency_key: None,
        })
        .collect();
    let results = store.complete_steps(&items, 30.0).await.unwrap();
    assert!(matches!(results[0], Ok(None)));
    assert!(matches!(results[1], Err(StoreError::Fenced)));
    assert!(matches!(results[2], Ok(None)));
    let steps = store.list_steps(t.task_id).await.unwrap();
    let status: Vec<(&str, &str)> = steps
        .iter()
        .map(|s| (s.step_key.as_str(), s.status.as_str()))
        .collect();
    assert_eq!(
        status,
        [
            ("a", "succeeded"),
            ("b", "ready"),
            ("c", "succeeded"),
            ("d", "ready")
        ]
    );
    let task = store.get_task(t.task_id).await.unwrap();
    assert_eq!(
        task.runtime_metadata,
        json!({"a": 1, "c": 1}),
        "only live steps' output params"
    );
    let attempts = store
        .list_attempts(t.task_id, trellis::store::Page::ALL)
        .await
        .unwrap();
    let ok: Vec<&str> = attempts
        .iter()
        .filter(|a| a.status == "succeeded")
        .map(|a| a.step_key.as_str())
        .collect();
    assert_eq!(ok, ["a", "c"]);
}

/// The harness's promise: each test's database is dropped when the test's last handle on it
/// goes, sessions still open on it included.
#[tokio::test]
async fn a_test_database_is_dropped_afterwards() {
    let admin = Store::connect(&trellis::testkit::admin_url(), 1, Duration::from_secs(30))
        .await
        .unwrap();
    let exists = |name: String| {
        let admin = admin.clone();
        async move {
            sqlx::query_scalar::<_, bool>(
                "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)",
            )
            .bind(name)
            .fetch_one(admin.pool())
            .await
            .unwrap()
        }
    };
    let db = fresh_db().await;
    let name = db.name.clone();
    let kept = db.clone();
    drop(db);
    assert!(exists(name.clone()).await, "a clone still holds it");
    // a session still open on it (as a leaked pool would hold) does not keep it
    let leaked = kept.store.clone();
    sqlx::query("SELECT 1")
        .execute(leaked.pool())
        .await
        .unwrap();
    drop(kept);
    assert!(!exists(name).await, "dropped with the last handle");
}

/// A step that a completion cycle claimed (the next ready step of a task that runs one step at
/// a time) starts at once, also while the claim loop is idle: here the poll period is an hour
/// and no notification is sent for a step that was ready all along, so a handed-off step left
/// waiting for the poll would never start within the limit.
#[tokio::test]
async fn a_handed_off_step_does_not_wait_for_the_poll() {
    let db = fresh_db().await;
    let store = db.store.clone();
    let steps: Vec<Value> = (1..=5)
        .map(|i| json!({"id": format!("s{i}"), "tool": "sleep", "parameters": {"ms": 20}}))
        .collect();
    let mut task = common::new_task(Value::Array(steps));
    task.limits.max_concurrent_steps = 1;
    store.submit_task(&task).await.unwrap();
    let mut cfg = WorkerConfig::from_settings(&common::test_settings());
    cfg.poll = Duration::from_secs(3600);
    let w = common::TestWorker::start(store.clone(), cfg);
    wait_for(
        "the steps to run one by one",
        Duration::from_secs(60),
        || async { (store.count_tasks("succeeded").await.unwrap() == 1).then_some(()) },
    )
    .await;
    w.stop().await;
}

/// The hot path plans its statements once per session: on a worker's generic-plans handle every
/// session starts with the mode; on an ordinary handle the claim's `SET LOCAL` ends with its
/// transaction and leaves the session as it was.
#[tokio::test]
async fn hot_transactions_use_generic_plans_without_leaking_the_setting() {
    let db = fresh_db().await;
    submit_many(&db.store, 2, 1).await;
    let mode = |store: Store| async move {
        let v: String = sqlx::query_scalar("SHOW plan_cache_mode")
            .fetch_one(store.pool())
            .await
            .unwrap();
        v
    };
    // one connection, so the claim and the SHOW share the session
    let plain = db.store.dedicated(1).await.unwrap();
    assert_eq!(
        plain
            .claim_steps(&claim(Uuid::now_v7(), 1))
            .await
            .unwrap()
            .len(),
        1
    );
    assert_eq!(
        mode(plain.clone()).await,
        "auto",
        "SET LOCAL ended with the claim"
    );

    let hot = plain.with_generic_plans().await.unwrap();
    assert_eq!(mode(hot.clone()).await, "force_generic_plan");
    assert_eq!(
        hot.claim_steps(&claim(Uuid::now_v7(), 1))
            .await
            .unwrap()
            .len(),
        1
    );
    assert_eq!(mode(hot).await, "force_generic_plan");
    assert_eq!(
        mode(plain).await,
        "auto",
        "the original handle is unchanged"
    );
}

/// The inline evaluation of a completion batch is set-based: three tasks finished by one batch
/// are evaluated together, and each takes its own way out — above its threshold it succeeds,
/// below it reflects again (auto reflection) or fails — with its `evaluations` row, final
/// score and events in order, as one evaluation decision each would have left them.
#[tokio::test]
async fn one_batch_evaluates_its_finished_tasks_each_to_its_own_outcome() {
    use trellis::domain::decision::DecisionContext;
    use trellis::domain::recovery::{Dimensions, Evaluation};
    use trellis::store::step_queue::{Cycle, InlineEvaluation};

    fn seventy(_: &DecisionContext) -> Evaluation {
        Evaluation {
            overall_score: 70.0,
            is_successful: true,
            dimensions: Dimensions {
                completeness: 70.0,
                correctness: 70.0,
                efficiency: 70.0,
                reliability: 70.0,
            },
            successes: vec!["ran".into()],
            failures: vec![],
            improvement_suggestions: vec![],
        }
    }
    let db = fresh_db().await;
    let store = &db.store;
    let mut ids = Vec::new();
    // (threshold, auto reflection): succeeds, reflects, fails
    for (threshold, reflect) in [(60.0, false), (90.0, true), (90.0, false)] {
        let mut t = common::new_task(json!([{"id": "a", "tool": "echo"}]));
        t.limits.success_threshold = threshold;
        t.limits.auto_reflection = reflect;
        ids.push(store.submit_task(&t).await.unwrap().task_id);
    }
    let w = Uuid::now_v7();
    let held = store.claim_steps(&claim(w, 10)).await.unwrap();
    assert_eq!(held.len(), 3);
    let items: Vec<StepSuccess> = held
        .iter()
        .map(|s| StepSuccess {
            cost: None,
            fence: s.fence(),
            worker_id: w,
            tool: "echo".into(),
            parameters: json!({}),
            output: json!({}),
            output_params: Default::default(),
            idempotency_key: None,
        })
        .collect();
    let done = store
        .complete_and_claim(&Cycle {
            items: &items,
            lease_secs: 30.0,
            inline: Some(InlineEvaluation {
                evaluate: seventy,
                policy: POLICY,
            }),
            claim: None,
            cost_warn_fraction: 0.8,
        })
        .await
        .unwrap();
    let by_task = |id: Uuid| {
        let i = held.iter().position(|s| s.task_id == id).unwrap();
        done.completed[i].as_ref().unwrap().clone()
    };
    assert!(by_task(ids[0]).is_none());
    let reflection = by_task(ids[1]).expect("the reflecting task's decision, leased to us");
    assert_eq!(reflection.task_id, ids[1]);
    assert!(by_task(ids[2]).is_none());
    let expected = [
        ("succeeded", "task_succeeded"),
        ("reflecting", "evaluation_completed"),
        ("failed", "task_failed"),
    ];
    for (id, (status, last)) in ids.iter().zip(expected) {
        let task = store.get_task(*id).await.unwrap();
        assert_eq!(task.status.as_str(), status, "{id}");
        assert_eq!(task.final_score, Some(70.0), "{id}");
        let events: Vec<(i64, String, chrono::DateTime<chrono::Utc>, Value)> =
            store.list_events(*id, 0, 100).await.unwrap();
        let kinds: Vec<&str> = events.iter().map(|e| e.1.as_str()).collect();
        let at = kinds
            .iter()
            .position(|k| *k == "evaluation_completed")
            .expect("an evaluation_completed event");
        assert_eq!(kinds.last(), Some(&last), "{id}: {kinds:?}");
        if status != "reflecting" {
            assert_eq!(
                at,
                kinds.len() - 2,
                "the evaluation, then the end: {kinds:?}"
            );
        }
        assert_eq!(events[at].3["is_successful"], json!(status == "succeeded"));
    }
    let rows: Vec<(Uuid, f64, bool, Value)> = sqlx::query_as(
        "SELECT task_id, overall_score, is_successful, successes FROM evaluations ORDER BY task_id",
    )
    .fetch_all(store.pool())
    .await
    .unwrap();
    assert_eq!(rows.len(), 3);
    for (id, score, ok, successes) in rows {
        assert_eq!(score, 70.0);
        assert_eq!(ok, id == ids[0]);
        assert_eq!(successes, json!(["ran"]));
    }
}

/// Hot-path issue, fourth step: claims and completions are HOT updates because no index of
/// `steps` reads a column they change; the running steps are listed in `running_steps`, which
/// follows every move into and out of `running` (claim, completion, failure, release, defer,
/// rescue, cancel) in the move's own transaction.
#[tokio::test]
async fn the_running_index_follows_every_move_and_steps_indexes_stay_still() {
    let db = fresh_db().await;
    let store = &db.store;
    // the columns a claim, a heartbeat, a completion or a failure writes
    let moving = [
        "status",
        "lease_owner",
        "lease_token",
        "lease_expires_at",
        "started_at",
        "updated_at",
        "output",
        "error",
        "attempts",
        "retry_count",
        "finished_at",
        "run_after",
    ];
    let defs: Vec<String> = sqlx::query_scalar(
        "SELECT pg_get_indexdef(indexrelid) FROM pg_index WHERE indrelid = 'steps'::regclass",
    )
    .fetch_all(store.pool())
    .await
    .unwrap();
    assert!(defs.len() >= 3, "{defs:?}");
    for def in &defs {
        let words: Vec<&str> = def
            .split(|c: char| !(c.is_alphanumeric() || c == '_'))
            .collect();
        for col in moving {
            assert!(!words.contains(&col), "{def} reads {col}");
        }
    }

    let agree = |when: &'static str| async move {
        assert_eq!(
            store.running_index_disagreements().await.unwrap(),
            0,
            "running_steps disagrees with steps.status {when}"
        );
    };
    let mut tasks = Vec::new();
    for _ in 0..6 {
        tasks.push(
            store
                .submit_task(&common::new_task(json!([{"id": "s", "tool": "echo"}])))
                .await
                .unwrap()
                .task_id,
        );
    }
    let w = Uuid::now_v7();
    let held = store.claim_steps(&claim(w, 6)).await.unwrap();
    assert_eq!(held.len(), 6);
    agree("after a claim").await;
    let running = |n: i64| async move {
        let rows: i64 = sqlx::query_scalar("SELECT count(*) FROM running_steps")
            .fetch_one(store.pool())
            .await
            .unwrap();
        assert_eq!(rows, n);
    };
    running(6).await;

    let ok = StepSuccess {
        cost: None,
        fence: held[0].fence(),
        worker_id: w,
        tool: "echo".into(),
        parameters: json!({}),
        output: json!({"ok": true}),
        output_params: Default::default(),
        idempotency_key: None,
    };
    let _ = store.complete_step(&ok, 30.0).await;
    agree("after a completion").await;
    let failure = trellis::domain::ToolFailure::new("tool_error", "boom", true);
    store
        .fail_step(
            &trellis::store::step_queue::StepFailure {
                fence: held[1].fence(),
                worker_id: w,
                tool: "echo".into(),
                parameters: json!({}),
                failure,
                idempotency_key: None,
            },
            POLICY,
        )
        .await
        .unwrap();
    agree("after a failure").await;
    store.release_step(&held[2].fence(), w).await.unwrap();
    agree("after a release").await;
    let wait = trellis::store::step_queue::ToolWait {
        tool: held[3].tool.clone(),
        until: chrono::Utc::now() + chrono::Duration::seconds(30),
        why: trellis::domain::circuit::Why::Held,
    };
    store
        .defer_step(&held[3].fence(), w, &wait, &POLICY)
        .await
        .unwrap();
    agree("after a defer").await;
    store.expire_lease(held[4].id).await.unwrap();
    assert_eq!(store.rescue_expired(10, POLICY).await.unwrap(), 1);
    agree("after a rescue").await;
    store.cancel_task(held[5].task_id).await.unwrap();
    agree("after a cancel").await;
    // a cancelled task's running step runs on until its worker reports
    running(1).await;
    let late = StepSuccess {
        cost: None,
        fence: held[5].fence(),
        ..ok
    };
    let _ = store.complete_step(&late, 30.0).await;
    agree("after a cancelled task's step reported").await;
    running(0).await;

    // a claim of what is ready again is listed again
    let again = store.claim_steps(&claim(w, 6)).await.unwrap();
    assert!(!again.is_empty());
    agree("after a second claim").await;
    running(again.len() as i64).await;
    let _ = tasks;
}

/// Task affinity: two live workers claiming from the same queue take different tasks (each its
/// share of the head first), so their completions never wait for each other's task rows; each
/// still gets a full claim, and a worker alone takes the head as before.
#[tokio::test]
async fn two_live_workers_claim_different_tasks() {
    let db = fresh_db().await;
    let store = &db.store;
    for _ in 0..40 {
        store
            .submit_task(&common::new_task(json!([
                {"id": "a", "tool": "echo"}, {"id": "b", "tool": "echo"},
                {"id": "c", "tool": "echo"}, {"id": "d", "tool": "echo"}
            ])))
            .await
            .unwrap();
    }
    let (a, b) = two_live_workers(store).await;
    let of_a = store.claim_steps(&claim(a, 16)).await.unwrap();
    let of_b = store.claim_steps(&claim(b, 16)).await.unwrap();
    assert_eq!((of_a.len(), of_b.len()), (16, 16));
    let tasks = |c: &[trellis::store::step_queue::ClaimedStep]| {
        c.iter()
            .map(|s| s.task_id)
            .collect::<std::collections::BTreeSet<_>>()
    };
    let (ta, tb) = (tasks(&of_a), tasks(&of_b));
    assert!(
        ta.is_disjoint(&tb),
        "both workers hold steps of {:?}",
        ta.intersection(&tb).collect::<Vec<_>>()
    );
}

/// Task affinity never holds back a more urgent step: a worker whose share holds only
/// ordinary steps still takes another worker's urgent one from the head first.
#[tokio::test]
async fn affinity_never_passes_over_a_more_urgent_step() {
    let db = fresh_db().await;
    let store = &db.store;
    for _ in 0..20 {
        store
            .submit_task(&common::new_task(json!([{"id": "a", "tool": "echo"}])))
            .await
            .unwrap();
    }
    let mut urgent = common::new_task(json!([{"id": "u", "tool": "echo"}]));
    urgent.priority = 10;
    let urgent = store.submit_task(&urgent).await.unwrap().task_id;
    let (a, b) = two_live_workers(store).await;
    // whichever worker's share the urgent task is in, the first claim of either takes it
    for w in [a, b] {
        let got = store.claim_steps(&claim(w, 2)).await.unwrap();
        assert!(
            got.iter().any(|s| s.task_id == urgent),
            "worker {w} claimed {:?} before the urgent task",
            got.iter().map(|s| s.task_id).collect::<Vec<_>>()
        );
        // give it back for the other worker's turn
        for s in got {
            store.release_step(&s.fence(), w).await.unwrap();
        }
    }
}

/// Two workers in the registry, alive (the first one's id is the lower).
async fn two_live_workers(store: &Store) -> (Uuid, Uuid) {
    let (a, b) = (Uuid::now_v7(), Uuid::now_v7());
    for id in [a, b] {
        store
            .register_worker(&trellis::store::workers::WorkerInfo {
                id,
                host: "test".into(),
                pid: 1,
                concurrency: 16,
                lease_secs: 30.0,
            })
            .await
            .unwrap();
    }
    (a, b)
}

/// A heartbeat never waits for a step row that another transaction is writing (above all the
/// completion of one of the same worker's steps): it renews the others and leaves that one to
/// the next beat. When it waited, it took its row locks in another order than the
/// completion's, and the two deadlocked (a second lost, the batch completed one by one).
#[tokio::test]
async fn a_heartbeat_passes_over_a_step_being_completed() {
    let db = fresh_db().await;
    let store = &db.store;
    submit_many(store, 2, 1).await;
    let worker = Uuid::now_v7();
    let held = store.claim_steps(&claim(worker, 2)).await.unwrap();
    assert_eq!(held.len(), 2);
    let pairs: Vec<(Uuid, i64)> = held.iter().map(|c| (c.id, c.lease_token)).collect();
    // a completion of the first step is under way: its row is locked
    let mut completing = store.pool().begin().await.unwrap();
    sqlx::query("UPDATE steps SET updated_at = now() WHERE id = $1")
        .bind(held[0].id)
        .execute(&mut *completing)
        .await
        .unwrap();
    let (renewed, _) = tokio::time::timeout(
        Duration::from_secs(30),
        store.heartbeat(worker, 300.0, &pairs, &[]),
    )
    .await
    .expect("the heartbeat waited for the row being completed")
    .unwrap();
    assert_eq!(renewed, 1);
    let lease_left = |id: Uuid| async move {
        sqlx::query_scalar::<_, f64>(
            "SELECT extract(epoch FROM lease_expires_at - now())::float8 FROM steps WHERE id = $1",
        )
        .bind(id)
        .fetch_one(store.pool())
        .await
        .unwrap()
    };
    assert!(
        lease_left(held[1].id).await > 60.0,
        "the free step was not renewed"
    );
    assert!(
        lease_left(held[0].id).await <= 30.0,
        "the locked step was renewed"
    );
    completing.rollback().await.unwrap();
    // the next beat renews it
    let (renewed, _) = store.heartbeat(worker, 300.0, &pairs, &[]).await.unwrap();
    assert_eq!(renewed, 2);
    assert!(lease_left(held[0].id).await > 60.0);
}

/// No statement Trellis sends is JIT-compiled, whatever sits between it and PostgreSQL: a stock
/// server has `jit = on`, and a batch's estimate passes `jit_above_cost` (a submit of 1,000
/// tasks spent about 2 s compiling). Directly the setting is a startup parameter, behind a
/// session pooler a `SET` after connecting, behind a transaction pooler part of each `BEGIN`;
/// every kind of statement the store runs sees it.
#[tokio::test]
async fn no_statement_is_jit_compiled_in_any_pooler_mode() {
    use trellis::store::{PoolConfig, Pooler};
    let db = fresh_db().await;
    let server_default: String =
        sqlx::query_scalar("SELECT boot_val FROM pg_settings WHERE name = 'jit'")
            .fetch_one(db.store.pool())
            .await
            .unwrap();
    assert_eq!(
        server_default, "on",
        "the test server compiles unless told not to"
    );
    for pooler in [Pooler::None, Pooler::Session, Pooler::Transaction] {
        let config = PoolConfig {
            pooler,
            ..PoolConfig::default()
        };
        let store = Store::connect_with(&db.url, &config).await.unwrap();
        let seen = store.setting_seen("jit").await.unwrap();
        assert_eq!(
            seen,
            ["off", "off", "off"],
            "{pooler:?}: pool, transaction, hot transaction"
        );
    }
}

/// A write's chores go with its rows: what a rolled-back savepoint (a bulk action's refused
/// task) asked for is not done at commit, and what came before it is.
#[tokio::test]
async fn a_rolled_back_savepoint_drops_its_chores() {
    let db = fresh_db().await;
    let store = &db.store;
    let t = store
        .submit_task(&common::new_task(json!([{"id": "s", "tool": "echo"}])))
        .await
        .unwrap();
    store
        .chores_across_a_rolled_back_savepoint(t.task_id)
        .await
        .unwrap();
    let reasons: Vec<String> = sqlx::query_scalar(
        "SELECT payload->>'reason' FROM events WHERE task_id = $1 AND kind = 'step_released' ORDER BY seq",
    )
    .bind(t.task_id)
    .fetch_all(store.pool())
    .await
    .unwrap();
    assert_eq!(reasons, ["kept"]);
    assert!(store.claim_queue_disagreements().await.unwrap().is_empty());
}
