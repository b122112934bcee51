//! `/metrics`: the families a scrape shows, and what it costs the database with a large
//! history (measured with `pg_stat_statements` on a cluster of the test's own).

use trellis::testkit as common;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use http_body_util::BodyExt;
use serde_json::json;
use tower::ServiceExt;
use trellis::api::{AppState, app};
use trellis::devpg::TempPostgres;
use trellis::store::Store;

async fn get(router: &axum::Router, path: &str) -> String {
    let resp = router
        .clone()
        .oneshot(
            Request::get(path)
                .header("authorization", format!("Bearer {}", common::ADMIN_KEY))
                .body(Body::empty())
                .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK, "{path}");
    let body = resp.into_body().collect().await.unwrap().to_bytes();
    String::from_utf8(body.to_vec()).unwrap()
}

/// Statements run and shared blocks they touched in this database since the last reset
/// (the reset and this read left out).
async fn cost(store: &Store) -> (i64, i64) {
    sqlx::query_as(
        "SELECT coalesce(sum(calls), 0)::bigint,
                coalesce(sum(shared_blks_hit + shared_blks_read), 0)::bigint
         FROM pg_stat_statements
         WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
           AND query NOT LIKE '%pg_stat_statements%'",
    )
    .fetch_one(store.pool())
    .await
    .unwrap()
}

async fn reset(store: &Store) {
    sqlx::query("SELECT pg_stat_statements_reset()")
        .execute(store.pool())
        .await
        .unwrap();
}

/// What scraping `path` cost: (statements, blocks), after one scrape to warm the pool.
async fn scrape_cost(router: &axum::Router, store: &Store, path: &str) -> (i64, i64) {
    get(router, path).await;
    reset(store).await;
    get(router, path).await;
    cost(store).await
}

/// Acceptance 3: the database side of a scrape is one statement whose cost does not grow
/// with the history — 200,000 finished steps later it touches about as many blocks as on an
/// empty database — while a statistics read that scans (`/api/v1/stats`) grows by orders of
/// magnitude under the same measurement.
#[tokio::test]
async fn a_scrape_costs_the_same_whatever_the_history_holds() {
    let pg = tokio::task::spawn_blocking(|| {
        TempPostgres::start_with(&[("shared_preload_libraries", "pg_stat_statements")])
    })
    .await
    .unwrap()
    .expect("a cluster with pg_stat_statements");
    let db = trellis::testkit::fresh_db_on(&pg.url()).await;
    let store = db.store.clone();
    sqlx::query("CREATE EXTENSION pg_stat_statements")
        .execute(store.pool())
        .await
        .unwrap();
    // live work, no worker: 3 tasks with a ready echo step and a blocked sleep step each
    for _ in 0..3 {
        store
            .submit_task(&common::new_task(json!([
                {"id": "a", "tool": "echo"},
                {"id": "b", "tool": "sleep", "parameters": {"ms": 1}, "dependencies": ["a"]}
            ])))
            .await
            .unwrap();
    }
    let router = app(AppState::new(store.clone(), common::test_settings()));
    // a request is counted once answered: the second scrape shows the first
    get(&router, "/metrics").await;
    let text = get(&router, "/metrics").await;
    for line in [
        "trellis_tasks{status=\"running\"} 3",
        "trellis_tasks{status=\"needs_intervention\"} 0",
        "trellis_steps{status=\"ready\",tool=\"echo\"} 3",
        "trellis_workers 0",
        "# TYPE trellis_http_request_duration_seconds histogram",
        "trellis_http_requests_total{method=\"GET\",status=\"200\"}",
    ] {
        assert!(text.contains(line), "{line:?} in\n{text}");
    }
    assert!(
        text.contains("trellis_ready_oldest_seconds{tool=\"echo\"}"),
        "{text}"
    );
    let (calls_empty, blocks_empty) = scrape_cost(&router, &store, "/metrics").await;
    let (_, stats_empty) = scrape_cost(&router, &store, "/api/v1/stats").await;

    store.load_history(20_000, 10).await.unwrap();
    let (calls_full, blocks_full) = scrape_cost(&router, &store, "/metrics").await;
    let (_, stats_full) = scrape_cost(&router, &store, "/api/v1/stats").await;
    eprintln!(
        "scrape: {calls_empty} statements / {blocks_empty} blocks empty, \
         {calls_full} / {blocks_full} with 200k steps; /stats: {stats_empty} → {stats_full} blocks"
    );
    assert_eq!(calls_empty, 1, "one statement per scrape");
    assert_eq!(calls_full, calls_empty, "no more statements with history");
    assert!(
        blocks_full <= blocks_empty * 2 + 64,
        "a scrape touched {blocks_full} blocks with history, {blocks_empty} without"
    );
    assert!(
        stats_full > stats_empty * 50,
        "the measurement sees a scan: /stats {stats_empty} → {stats_full} blocks"
    );
}

/// The dashboard overview's count of the last hour's tasks: every status present, a count
/// stops at its cap + 1, and tasks older than the window are not counted.
#[tokio::test]
async fn the_overview_counts_stop_at_their_cap() {
    let db = trellis::testkit::fresh_db().await;
    let store = db.store.clone();
    for _ in 0..3 {
        let t = common::new_task(json!([{"id": "a", "tool": "echo"}]));
        store.submit_task(&t).await.unwrap();
    }
    let total = |m: &std::collections::BTreeMap<String, i64>| m.values().sum::<i64>();
    let open = store.recent_task_counts(60, 10).await.unwrap();
    assert_eq!(open.len(), 10, "every status: {open:?}");
    assert_eq!(total(&open), 3, "{open:?}");
    let capped = store.recent_task_counts(60, 2).await.unwrap();
    assert_eq!(
        total(&capped),
        3,
        "3 tasks, cap 2: reported as 2 + 1: {capped:?}"
    );
    let capped = store.recent_task_counts(60, 1).await.unwrap();
    assert_eq!(
        total(&capped),
        2,
        "3 tasks, cap 1: reported as 1 + 1: {capped:?}"
    );
    let none = store.recent_task_counts(0, 10).await.unwrap();
    assert_eq!(
        total(&none),
        0,
        "a window that began after the submits: {none:?}"
    );
}

/// The oldest open transaction on the database is on `/metrics`
/// (`trellis_db_oldest_transaction_seconds`) and in `GET /api/v1/stats/activity`
/// (`oldest_transaction_secs`): a report that holds a snapshot shows, and goes when it commits.
#[tokio::test]
async fn the_oldest_open_transaction_is_shown() {
    let db = trellis::testkit::fresh_db().await;
    let store = db.store.clone();
    let router = app(AppState::new(store.clone(), common::test_settings()));
    let gauge = |text: &str| -> f64 {
        text.lines()
            .find_map(|l| l.strip_prefix("trellis_db_oldest_transaction_seconds "))
            .expect("the gauge")
            .parse()
            .unwrap()
    };
    let activity = |text: &str| -> f64 {
        serde_json::from_str::<serde_json::Value>(text).unwrap()["oldest_transaction_secs"]
            .as_f64()
            .unwrap()
    };
    assert!(gauge(&get(&router, "/metrics").await) < 1.0);
    let mut report = store.pool().acquire().await.unwrap();
    sqlx::query("BEGIN ISOLATION LEVEL REPEATABLE READ")
        .execute(&mut *report)
        .await
        .unwrap();
    sqlx::query("SELECT count(*) FROM tasks")
        .execute(&mut *report)
        .await
        .unwrap();
    trellis::testkit::wait_for(
        "the report to be a second old",
        std::time::Duration::from_secs(10),
        || async {
            let on_metrics = gauge(&get(&router, "/metrics").await);
            let on_activity = activity(&get(&router, "/api/v1/stats/activity").await);
            (on_metrics >= 1.0 && on_activity >= 1.0).then_some(())
        },
    )
    .await;
    sqlx::query("COMMIT").execute(&mut *report).await.unwrap();
    drop(report);
    assert!(
        gauge(&get(&router, "/metrics").await) < 1.0,
        "gone with the commit"
    );
}

/// Every process shows its own server connections on `/metrics`
/// (`trellis_db_connections{state="open"|"idle"}`): its pool's and LISTEN's.
#[tokio::test]
async fn a_process_shows_its_connections() {
    let db = trellis::testkit::fresh_db().await;
    let store = Store::connect(&db.url, 3, std::time::Duration::from_secs(10))
        .await
        .unwrap();
    let router = app(AppState::new(store.clone(), common::test_settings()));
    let gauge = |text: &str, state: &str| -> f64 {
        let key = format!("trellis_db_connections{{state=\"{state}\"}} ");
        text.lines()
            .find_map(|l| l.strip_prefix(key.as_str()))
            .unwrap_or_else(|| panic!("no {key} in {text}"))
            .parse()
            .unwrap()
    };
    // two held, and the scrape's own statement opens the third and gives it back
    let held = [
        store.pool().acquire().await.unwrap(),
        store.pool().acquire().await.unwrap(),
    ];
    let text = get(&router, "/metrics").await;
    assert_eq!(gauge(&text, "open"), 3.0);
    assert!(gauge(&text, "idle") <= 1.0, "two are held: {text}");
    drop(held);
    // LISTEN's connection is the process's too; the pool's three come back idle
    let _listener = store.ready_listener().await.unwrap().expect("a direct URL");
    trellis::testkit::wait_for(
        "4 open, the pool's 3 idle",
        std::time::Duration::from_secs(10),
        || async {
            let text = get(&router, "/metrics").await;
            (gauge(&text, "open") == 4.0 && gauge(&text, "idle") >= 2.0).then_some(())
        },
    )
    .await;
}
