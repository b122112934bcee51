//! Fan-out acceptance 2: a `trellis-worker` process killed with SIGKILL while it expands a map
//! of 5,000 items, ten times. After every kill each map is whole (its list stored, every item
//! before the release cursor has its step) or absent (no list, no item); in the end every map
//! joins all its items, and no item has two successful attempts.

use trellis::testkit as common;
use trellis::testkit::procs;

use std::time::Duration;

use procs::WorkerProc;
use serde_json::json;
use trellis::store::Store;
use trellis::testkit::{fresh_db, wait_for};
use uuid::Uuid;

const ITEMS: usize = 5_000;

/// Per map step of the database: (its task, whether its list is stored, the release cursor, its
/// item steps (live)).
async fn maps(store: &Store) -> Vec<(Uuid, bool, i64, i64)> {
    sqlx::query_as(
        "SELECT s.task_id, m.step_id IS NOT NULL, coalesce(m.released, 0)::int8,
                (SELECT count(*) FROM steps i WHERE i.map_step_id = s.id AND i.live)
         FROM steps s LEFT JOIN step_maps m ON m.step_id = s.id
         WHERE s.map IS NOT NULL AND s.live",
    )
    .fetch_all(store.pool())
    .await
    .unwrap()
}

fn whole_or_absent(maps: &[(Uuid, bool, i64, i64)]) {
    for (task, stored, cursor, items) in maps {
        match stored {
            true => assert_eq!(
                items, cursor,
                "task {task}: a stored map has a step for every item before its cursor"
            ),
            false => assert_eq!(*items, 0, "task {task}: a map not stored has no item"),
        }
    }
}

#[tokio::test]
async fn kill_9_during_expansions_leaves_every_map_whole_or_absent() {
    let db = fresh_db().await;
    let store = db.store.clone();
    let items: Vec<usize> = (0..ITEMS).collect();
    // a victim may hold a map step more than once: no poison step here
    let env = [
        ("APP_WORKER__MAX_RESCUES", "50"),
        ("APP_WORKER__CONCURRENCY", "32"),
    ];
    let mut expanded_at_kill = 0;
    for round in 0..10 {
        let mut task = common::new_task(json!([
            {"id": "m", "tool": "echo", "parameters": {"n": "${item}", "at": "${item_index}"},
             "map": {"over": "${context.items}", "max_items": ITEMS}}
        ]));
        task.context = json!({ "items": items });
        task.limits.max_concurrent_steps = 32;
        let id = store.submit_task(&task).await.unwrap().task_id;
        let mut victim = WorkerProc::start(&db, &env);
        let victim_id = victim.id;
        // kill as soon as the victim holds the map step (its expansion under way), or it is
        // already expanded
        wait_for(
            "the victim to take the map step",
            Duration::from_secs(60),
            || {
                let store = store.clone();
                async move {
                    let (owner, status): (Option<Uuid>, String) = sqlx::query_as(
                        "SELECT lease_owner, status FROM steps WHERE task_id = $1 AND step_key = 'm'",
                    )
                    .bind(id)
                    .fetch_one(store.pool())
                    .await
                    .unwrap();
                    (owner == Some(victim_id) || status == "waiting").then_some(())
                }
            },
        )
        .await;
        victim.signal(libc::SIGKILL);
        assert!(!victim.wait_exit(Duration::from_secs(10)).await.success());
        let now = maps(&store).await;
        whole_or_absent(&now);
        if now.iter().any(|m| m.0 == id && m.1) {
            expanded_at_kill += 1;
        }
        eprintln!(
            "round {round}: the map was stored when the kill landed: {expanded_at_kill} so far"
        );
    }
    let survivor = WorkerProc::start(&db, &env);
    let began = std::time::Instant::now();
    while store.count_tasks("succeeded").await.unwrap() < 10 {
        if began.elapsed() > Duration::from_secs(300) {
            let tasks: Vec<(String, Option<serde_json::Value>)> =
                sqlx::query_as("SELECT status, error FROM tasks")
                    .fetch_all(store.pool())
                    .await
                    .unwrap();
            let steps: Vec<(String, String, i64)> = sqlx::query_as(
                "SELECT CASE WHEN map_step_id IS NULL THEN step_key ELSE 'item' END, status, count(*)
                 FROM steps GROUP BY 1, 2 ORDER BY 1, 2",
            )
            .fetch_all(store.pool())
            .await
            .unwrap();
            panic!("the maps did not all end: tasks {tasks:?}, steps {steps:?}");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    whole_or_absent(&maps(&store).await);
    let doubles: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM (SELECT task_id, step_key FROM attempts WHERE status = 'succeeded'
                                GROUP BY task_id, step_key HAVING count(*) > 1) d",
    )
    .fetch_one(store.pool())
    .await
    .unwrap();
    assert_eq!(doubles, 0, "no item ran twice to completion");
    let joined: Vec<(i64,)> = sqlx::query_as(
        "SELECT jsonb_array_length(output)::int8 FROM steps WHERE step_key = 'm' AND status = 'succeeded'",
    )
    .fetch_all(store.pool())
    .await
    .unwrap();
    assert_eq!(joined.len(), 10);
    assert!(joined.iter().all(|(n,)| *n == ITEMS as i64), "{joined:?}");
    let items_done: i64 = sqlx::query_scalar(
        "SELECT count(DISTINCT (task_id, step_key)) FROM attempts
         WHERE status = 'succeeded' AND step_key LIKE 'm[%'",
    )
    .fetch_one(store.pool())
    .await
    .unwrap();
    assert_eq!(items_done, 10 * ITEMS as i64);
    let mut survivor = survivor;
    survivor.signal(libc::SIGTERM);
    survivor.wait_exit(Duration::from_secs(30)).await;
}
