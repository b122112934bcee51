//! Cron schedules across real worker processes: one task per tick with two workers, one
//! catch-up run after both were down, nothing after a pause.

use std::time::Duration;

use chrono::{DateTime, Utc};
use serde_json::json;
use trellis::store::Store;
use trellis::store::schedules::NewSchedule;
use trellis::testkit::procs::WorkerProc;
use trellis::testkit::{self as common, fresh_db, wait_for};

/// The ticks of the schedule's tasks, in order (from their idempotency keys).
async fn ticks(store: &Store) -> Vec<DateTime<Utc>> {
    let keys: Vec<String> = sqlx::query_scalar(
        "SELECT idempotency_key FROM tasks WHERE schedule_id = 'every-second' ORDER BY 1",
    )
    .fetch_all(store.pool())
    .await
    .unwrap();
    keys.iter()
        .map(|k| {
            let t = k.strip_prefix("schedule:every-second:").unwrap();
            DateTime::parse_from_rfc3339(t).unwrap().with_timezone(&Utc)
        })
        .collect()
}

/// Until the database's clock passes `t`.
async fn until(store: &Store, t: DateTime<Utc>) {
    wait_for(
        &format!("the clock to pass {t}"),
        Duration::from_secs(30),
        || async { (store.now().await.unwrap() >= t).then_some(()) },
    )
    .await;
}

#[tokio::test]
async fn one_task_per_tick_across_two_workers_and_a_restart() {
    let db = fresh_db().await;
    let store = db.store.clone();
    let plan =
        json!({"steps": [{"id": "e", "tool": "echo", "parameters": {"tick": "${metadata.tick}"}}]});
    let mut s = NewSchedule {
        id: "every-second".into(),
        cron: "* * * * * *".into(),
        timezone: "UTC".into(),
        description: String::new(),
        template: None,
        input: None,
        plan: Some(plan),
        priority: 0,
        limits: common::new_task(json!([])).limits,
        enabled: true,
        overlap: "allow".into(),
        tenant: "default".into(),
    };
    let start = store.now().await.unwrap();
    store.create_schedule(&s).await.unwrap();
    let mut a = WorkerProc::start(&db, &[]);
    let mut b = WorkerProc::start(&db, &[]);
    until(&store, start + chrono::Duration::seconds(4)).await;
    a.signal(libc::SIGKILL);
    b.signal(libc::SIGKILL);
    a.wait_exit(Duration::from_secs(10)).await;
    b.wait_exit(Duration::from_secs(10)).await;
    let before = ticks(&store).await.len();
    // both down for three ticks
    until(
        &store,
        store.now().await.unwrap() + chrono::Duration::seconds(3),
    )
    .await;
    assert_eq!(
        ticks(&store).await.len(),
        before,
        "nothing fires with no worker"
    );
    let _a = WorkerProc::start(&db, &[]);
    let _b = WorkerProc::start(&db, &[]);
    until(&store, start + chrono::Duration::seconds(12)).await;
    s.enabled = false;
    store.replace_schedule(&s).await.unwrap();
    let paused = store.now().await.unwrap();
    let fired = ticks(&store).await;
    until(&store, paused + chrono::Duration::seconds(2)).await;
    assert_eq!(
        ticks(&store).await,
        fired,
        "a paused schedule fires nothing"
    );

    // one task per tick: every tick is a second after the one before, but for one gap — the
    // catch-up run after the restart is the latest missed tick, not one per missed tick
    let gaps: Vec<i64> = fired
        .windows(2)
        .map(|w| (w[1] - w[0]).num_milliseconds())
        .filter(|ms| *ms != 1000)
        .collect();
    assert!(fired.len() >= 8, "{fired:?}");
    assert!(gaps.len() <= 1, "ticks: {fired:?}");
    assert!(gaps.iter().all(|g| *g > 1000 && *g <= 5000), "{gaps:?}");
    // and every task ran with its tick
    wait_for(
        "every scheduled task to end",
        Duration::from_secs(30),
        || async {
            let n: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM tasks WHERE schedule_id IS NOT NULL AND status <> 'succeeded'",
        )
        .fetch_one(store.pool())
        .await
        .unwrap();
            (n == 0).then_some(())
        },
    )
    .await;
}
