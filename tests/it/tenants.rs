//! Tenants (fairness issue, part 3): a key of tenant `b` walks every route of the served
//! OpenAPI document against tenant `default`'s objects and sees none of them; it cannot name
//! another tenant's tools or templates, reuse its idempotency keys, resolve its waits, or
//! receive its webhook deliveries; an admin reads across tenants with `?tenant=`.

use trellis::testkit as common;

use std::time::Duration;

use axum::http::StatusCode;
use common::{TestApp, client_with_key, spawn_app_with};
use serde_json::{Value, json};
use uuid::Uuid;

/// The test app, with a key to seal secrets with.
async fn app() -> TestApp {
    let mut s = common::test_settings();
    s.secrets.key = Some("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=".into());
    spawn_app_with(s).await
}

async fn key_of(app: &TestApp, role: &str, tenant: &str) -> String {
    app.key(role, tenant).await
}

async fn send(http: &reqwest::Client, method: &str, url: &str, body: Value) -> (u16, String) {
    let req = match method {
        "get" => http.get(url),
        "post" => http.post(url).json(&body),
        "delete" => http.delete(url),
        "patch" => http.patch(url).json(&body),
        "put" => http.put(url).json(&body),
        other => panic!("method {other}"),
    };
    let r = req.send().await.unwrap();
    let status = r.status().as_u16();
    (status, r.text().await.unwrap())
}

/// Tenant `default`'s objects, one of each kind a route can name.
struct Objects {
    task: Uuid,
    wait: Uuid,
    webhook: String,
    key: String,
    bulk: String,
}

impl Objects {
    /// Every id or name of these objects that must never reach another tenant.
    fn secrets(&self) -> Vec<String> {
        vec![
            self.task.to_string(),
            self.wait.to_string(),
            self.webhook.clone(),
            self.key.clone(),
            self.bulk.clone(),
            "a-tool".into(),
            "a-template".into(),
            "a-schedule".into(),
            "a-secret".into(),
            "a-event-key".into(),
        ]
    }

    fn fill(&self, path: &str) -> String {
        let id = match path.split('/').nth(3).unwrap_or("") {
            "tasks" => self.task.to_string(),
            "waits" => self.wait.to_string(),
            "webhooks" => self.webhook.clone(),
            "keys" => self.key.clone(),
            "bulk-actions" => self.bulk.clone(),
            "tools" => "a-tool".into(),
            "templates" => "a-template".into(),
            "schedules" => "a-schedule".into(),
            "mcp-servers" => "a-mcp".into(),
            _ => "x".into(),
        };
        path.replace("{id}", &id)
            .replace("{name}", "a-secret")
            .replace("{pattern}", "a-*")
            .replace("{tenant}", "default")
            .replace("{delivery_id}", &Uuid::nil().to_string())
            .replace("{token}", "not-a-token")
    }
}

/// Tenant `default` (the admin's): a tool, a template, a schedule, a secret, a webhook and a
/// task parked on an approval (its wait).
async fn tenant_a(app: &TestApp) -> Objects {
    common::register_tool(app, "a-tool", "http://127.0.0.1:9/a", json!({})).await;
    let (s, v) = app
        .post(
            "/api/v1/templates",
            &json!({"id": "a-template", "plan": {"steps": [{"id": "s", "tool": "echo"}]}}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
    let (s, v) = app
        .post(
            "/api/v1/schedules",
            &json!({"id": "a-schedule", "cron": "0 0 1 1 *", "template": "a-template"}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
    let r = app
        .http
        .put(app.url("/api/v1/secrets/a-secret"))
        .json(&json!({"value": "s3cret"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 204);
    let (s, v) = app
        .post(
            "/api/v1/webhooks",
            &json!({"url": "http://127.0.0.1:9/hook", "events": ["task_submitted"]}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
    let webhook = v["id"].as_str().unwrap().to_string();
    let task = app
        .submit(json!({"description": "tenant a's task", "idempotency_key": "same-key",
                       "plan": {"steps": [
                           {"id": "ok", "tool": "approval", "parameters": {"prompt": "go?"}},
                           {"id": "ev", "tool": "wait_event", "parameters": {"key": "a-event-key"}}]}}))
        .await;
    let worker = app.worker(|_| {});
    let wait = common::wait_for("tenant a's approval", Duration::from_secs(20), || async {
        let (_, v) = app.get(&format!("/api/v1/waits?task_id={task}")).await;
        v.as_array()
            .and_then(|w| w.iter().find(|w| w["kind"] == "approval"))
            .map(|w| w["wait_id"].as_str().unwrap().parse::<Uuid>().unwrap())
    })
    .await;
    worker.stop().await;
    let (s, v) = app
        .post(
            "/api/v1/keys",
            &json!({"name": "a's reader", "role": "reader"}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
    assert_eq!(v["tenant"], "default");
    let key = v["id"].as_str().unwrap().to_string();
    let (s, v) = app
        .post(
            "/api/v1/bulk-actions",
            &json!({"action": "resume", "ids": [task], "name": "a's bulk action"}),
        )
        .await;
    assert_eq!(s, StatusCode::ACCEPTED, "{v}");
    let bulk = v["bulk_action_id"].as_str().unwrap().to_string();
    Objects {
        task,
        wait,
        webhook,
        key,
        bulk,
    }
}

/// Acceptance 5: every route of the served document, with tenant `b`'s operator and reader
/// keys, against tenant `default`'s objects: a 404 (or a 403 where the route is the admin's),
/// or an answer that names none of them. Nothing of tenant `default` changes.
#[tokio::test]
async fn a_second_tenants_keys_never_see_the_first_tenants_objects() {
    let app = app().await;
    let a = tenant_a(&app).await;
    let operator = client_with_key(Some(&key_of(&app, "operator", "b").await));
    let reader = client_with_key(Some(&key_of(&app, "reader", "b").await));
    let (_, doc) = app.get("/api/v1/openapi.json").await;
    let mut by_id = 0;
    for (path, item) in doc["paths"].as_object().unwrap() {
        if !path.starts_with("/api/v1/") || path.starts_with("/api/v1/callbacks/") {
            continue;
        }
        for method in item.as_object().unwrap().keys() {
            let url = app.url(&a.fill(path));
            for (who, http) in [("operator", &operator), ("reader", &reader)] {
                // a body the route takes, so that only the tenant can stop it
                let sent = match path.rsplit('/').next().unwrap() {
                    "rerun" => json!({"from_step": "ok"}),
                    "reschedule" => {
                        json!({"run_at": (chrono::Utc::now() + chrono::Duration::days(1)).to_rfc3339()})
                    }
                    _ => json!({}),
                };
                let (status, body) = send(http, method, &url, sent).await;
                let names_one = path.contains('{');
                if names_one {
                    assert!(
                        status == 404 || status == 403,
                        "{method} {path} as b's {who}: {status} {body}"
                    );
                }
                // a 404 or 403 names what was asked, and nothing else
                for s in a
                    .secrets()
                    .iter()
                    .filter(|_| status != 404 && status != 403)
                {
                    assert!(
                        !body.contains(s.as_str()),
                        "{method} {path} as b's {who} answered {status} naming {s}: {body}"
                    );
                }
            }
            by_id += usize::from(path.contains('{'));
        }
    }
    assert!(by_id >= 20, "only {by_id} routes with an id walked");
    // the lists answer, empty of tenant default's objects; its counts are not b's
    for list in [
        "/api/v1/tasks",
        "/api/v1/waits",
        "/api/v1/templates",
        "/api/v1/schedules",
    ] {
        let (s, body) = send(&reader, "get", &app.url(list), json!(null)).await;
        assert_eq!(s, 200, "{list}: {body}");
        assert_eq!(body, "[]", "{list}");
    }
    let (_, stats) = send(&reader, "get", &app.url("/api/v1/stats"), json!(null)).await;
    let stats: Value = serde_json::from_str(&stats).unwrap();
    assert_eq!(stats["tasks"]["running"], 0, "{stats}");
    // the tools b sees: the built-ins only
    let (_, tools) = send(&reader, "get", &app.url("/api/v1/tools"), json!(null)).await;
    let tools: Value = serde_json::from_str(&tools).unwrap();
    assert!(
        tools
            .as_array()
            .unwrap()
            .iter()
            .all(|t| t["kind"] == "builtin"),
        "{tools}"
    );
    // the event stream of a's task is not there for b
    let r = reader
        .get(app.url(&format!("/api/v1/tasks/{}/events", a.task)))
        .header("accept", "text/event-stream")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 404);
    // nothing of a's changed: its task still waits on its approval, its objects are there
    let (_, w) = app.get(&format!("/api/v1/waits/{}", a.wait)).await;
    assert_eq!(w["status"], "open", "{w}");
    for p in [
        "/api/v1/tools/a-tool",
        "/api/v1/templates/a-template",
        "/api/v1/schedules/a-schedule",
    ] {
        assert_eq!(app.get(p).await.0, StatusCode::OK, "{p}");
    }
    let (_, t) = app.get(&format!("/api/v1/tasks/{}", a.task)).await;
    assert_eq!(t["status"], "running", "{t}");
}

/// A tenant's plans name its own tools and templates (and the built-ins); its idempotency keys
/// and event keys are its own; a webhook gets its own tenant's events; an admin reads one
/// tenant with `?tenant=`, and every tenant without.
#[tokio::test]
async fn what_a_tenant_names_is_its_own() {
    let app = app().await;
    let a = tenant_a(&app).await;
    let b = client_with_key(Some(&key_of(&app, "operator", "b").await));
    let submit = |body: Value| {
        let b = b.clone();
        let url = app.url("/api/v1/tasks");
        async move {
            let r = b.post(url).json(&body).send().await.unwrap();
            let s = r.status().as_u16();
            (s, r.json::<Value>().await.unwrap())
        }
    };
    let (s, v) =
        submit(json!({"description": "d", "plan": {"steps": [{"id": "s", "tool": "a-tool"}]}}))
            .await;
    assert_eq!(s, 422, "{v}");
    assert!(v.to_string().contains("a-tool"), "{v}");
    let (s, v) = submit(json!({"description": "d", "template": "a-template"})).await;
    assert_eq!(s, 422, "{v}");
    // the same idempotency key is another task in another tenant
    let (s, v) = submit(json!({"description": "b's", "idempotency_key": "same-key",
                               "plan": {"steps": [{"id": "s", "tool": "wait_event",
                                                   "parameters": {"key": "a-event-key"}}]}}))
    .await;
    assert_eq!(s, 202, "{v}");
    assert_eq!(v["created"], true);
    let b_task: Uuid = v["task_id"].as_str().unwrap().parse().unwrap();
    assert_ne!(b_task, a.task);
    // b's event resolves none of a's waits (nor does a's resolve b's)
    let r = b
        .post(app.url("/api/v1/events"))
        .json(&json!({"key": "a-event-key", "payload": {}}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 202);
    let resolved: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM waits WHERE tenant = 'default' AND status <> 'open'",
    )
    .fetch_one(app.store().pool())
    .await
    .unwrap();
    assert_eq!(resolved, 0);
    // tenant default's webhook has deliveries of a's task, none of b's
    let of = |t: Uuid| {
        sqlx::query_scalar::<_, i64>("SELECT count(*) FROM webhook_deliveries WHERE task_id = $1")
            .bind(t)
            .fetch_one(app.store().pool())
    };
    assert!(of(a.task).await.unwrap() >= 1);
    assert_eq!(of(b_task).await.unwrap(), 0);
    // the admin: one tenant with ?tenant=, every tenant without
    let ids = |v: &Value| -> Vec<String> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|t| t["task_id"].as_str().unwrap().to_string())
            .collect()
    };
    let (_, all) = app.get("/api/v1/tasks").await;
    assert!(ids(&all).contains(&a.task.to_string()) && ids(&all).contains(&b_task.to_string()));
    let (_, only_b) = app.get("/api/v1/tasks?tenant=b").await;
    assert_eq!(ids(&only_b), vec![b_task.to_string()]);
    let (s, v) = app.get("/api/v1/tasks?tenant=not%20a%20name").await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{v}");
    // an admin's ?tenant= places what it creates there
    let (s, v) = app
        .post(
            "/api/v1/templates?tenant=b",
            &json!({"id": "b-template", "plan": {"steps": [{"id": "s", "tool": "echo"}]}}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
    assert_eq!(v["tenant"], "b");
    let (s, v) = submit(json!({"description": "d", "template": "b-template"})).await;
    assert_eq!(s, 202, "{v}");
    // a schedule id is the tenant's own: b's "a-schedule" is another schedule
    let r = b
        .post(app.url("/api/v1/schedules"))
        .json(&json!({"id": "a-schedule", "cron": "0 0 2 1 *", "template": "b-template"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 201);
    let r = b
        .delete(app.url("/api/v1/schedules/a-schedule"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 204);
    let (s, v) = app.get("/api/v1/schedules/a-schedule").await;
    assert_eq!(
        (s, v["cron"].as_str()),
        (StatusCode::OK, Some("0 0 1 1 *")),
        "{v}"
    );
    // whoami names the key's tenant
    let r = b.get(app.url("/api/v1/whoami")).send().await.unwrap();
    let who: Value = r.json().await.unwrap();
    assert_eq!(who["tenant"], "b");
}

/// A task of `tenant` with `n` independent one-step sleeps.
fn task_of(tenant: &str, n: usize) -> trellis::store::submit::NewTask {
    let steps: Vec<Value> = (0..n)
        .map(|i| json!({"id": format!("s{i}"), "tool": "echo"}))
        .collect();
    let mut t = common::new_task(json!(steps));
    t.tenant = tenant.into();
    t.limits.max_concurrent_steps = n as i32;
    t
}

/// A tenant's `max_running_tasks` admits a task with no running steps only while fewer than
/// the cap run; its `max_running_steps` (here the `[tenants]` default) caps its running steps;
/// another tenant is not held by either.
#[tokio::test]
async fn a_tenants_caps_hold_in_the_claim() {
    let db = common::fresh_db().await;
    let store = db
        .store
        .clone()
        .with_tenant_caps(trellis::domain::tenant::Caps {
            max_running_tasks: 0,
            max_running_steps: 3,
        });
    store.put_tenant_caps("c", Some(1), None).await.unwrap();
    for t in [task_of("c", 2), task_of("c", 2), task_of("c", 2)] {
        store.submit_task(&t).await.unwrap();
    }
    let worker = Uuid::now_v7();
    let claim = super::depth::claim(worker, 64, 0);
    let first = store.claim_steps(&claim).await.unwrap();
    assert_eq!(first.len(), 2, "one task of c at a time, both its steps");
    assert!(first.iter().all(|s| s.task_id == first[0].task_id));
    assert!(store.claim_steps(&claim).await.unwrap().is_empty());
    super::depth::complete(&store, worker, &first[..1]).await;
    assert!(
        store.claim_steps(&claim).await.unwrap().is_empty(),
        "its task still runs"
    );
    super::depth::complete(&store, worker, &first[1..]).await;
    let next = store.claim_steps(&claim).await.unwrap();
    assert_eq!(next.len(), 2, "the next task of c is admitted");
    assert_ne!(next[0].task_id, first[0].task_id);
    // the default caps d's running steps at 3 across its tasks; c's own row wins for c
    for _ in 0..5 {
        store.submit_task(&task_of("d", 1)).await.unwrap();
    }
    let d = store.claim_steps(&claim).await.unwrap();
    assert_eq!(d.len(), 3, "{d:?}");
    assert!(store.claim_steps(&claim).await.unwrap().is_empty());
    // without the [tenants] default, d's other two tasks and default's run at once (c is
    // still held by its own row: its task runs)
    for _ in 0..5 {
        store.submit_task(&task_of("default", 1)).await.unwrap();
    }
    let free = db.store.claim_steps(&claim).await.unwrap();
    assert_eq!(
        free.len(),
        7,
        "without [tenants] caps, default and d are not held"
    );
    // a tenant's row goes: the default applies again
    assert!(store.delete_tenant_caps("c").await.unwrap());
    super::depth::complete(&store, worker, &next).await;
    let c = store.claim_steps(&claim).await.unwrap();
    assert_eq!(c.len(), 2, "c's last task, no longer held to one task");
}

/// `max_running_steps` of 2 holds under 4 workers draining 300 tasks of the tenant, checked
/// from the attempts' start and end times (the database's clock), while another tenant's
/// tasks run past it.
#[tokio::test]
async fn a_tenants_step_cap_holds_across_four_workers() {
    let app = app().await;
    let r = app
        .http
        .put(app.url("/api/v1/tenants/b"))
        .json(&json!({"max_running_steps": 2}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let b = client_with_key(Some(&key_of(&app, "operator", "b").await));
    let batch = |n: usize| {
        let tasks: Vec<Value> = (0..n)
            .map(|i| {
                json!({"description": "capped", "plan": {"steps": [
                    {"id": "s", "tool": "sleep", "parameters": {"ms": 5, "i": i}}]}})
            })
            .collect();
        json!({"tasks": tasks})
    };
    let r = b
        .post(app.url("/api/v1/tasks/batch"))
        .json(&batch(300))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 202);
    let (s, v) = app.post("/api/v1/tasks/batch", &batch(300)).await;
    assert!(s.is_success(), "{v}");
    let workers: Vec<_> = (0..4).map(|_| app.worker(|c| c.concurrency = 8)).collect();
    common::wait_for("every task to end", Duration::from_secs(120), || async {
        let n: i64 = sqlx::query_scalar("SELECT count(*) FROM tasks WHERE finished_at IS NOT NULL")
            .fetch_one(app.store().pool())
            .await
            .unwrap();
        (n == 600).then_some(())
    })
    .await;
    for w in workers {
        w.stop().await;
    }
    let capped = app.peak_attempts(Some("b")).await;
    assert!(capped <= 2, "{capped} steps of tenant b ran at once");
    assert_eq!(capped, 2, "the cap was reached");
    assert!(
        app.peak_attempts(Some("default")).await > 2,
        "the other tenant is not held"
    );
}

/// The activity and the metrics of one tenant: another tenant's reader sees its own (none),
/// an admin every tenant's queue by tenant, `/metrics?tenant=` one tenant's gauges.
#[tokio::test]
async fn activity_and_metrics_per_tenant() {
    let app = app().await;
    // default's ready work (no worker runs)
    app.submit(json!({"description": "queued", "plan": {"steps": [{"id": "s", "tool": "echo"}]}}))
        .await;
    let reader = client_with_key(Some(&key_of(&app, "reader", "b").await));
    let r = reader
        .get(app.url("/api/v1/stats/activity"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let theirs: Value = r.json().await.unwrap();
    assert_eq!(theirs["unfinished_tasks"]["running"], 0, "{theirs}");
    assert_eq!(theirs["queue_by_tenant"], json!([]), "{theirs}");
    assert_eq!(theirs["queue"], json!([]), "{theirs}");
    let (_, all) = app.get("/api/v1/stats/activity").await;
    assert_eq!(
        all["queue_by_tenant"],
        json!([{"key": "default", "ready": 1, "running": 0}]),
        "{all}"
    );
    assert_eq!(all["unfinished_tasks"]["running"], 1, "{all}");
    let metrics = |q: &'static str, key: Option<String>| {
        let (url, http) = (
            app.url(&format!("/metrics{q}")),
            client_with_key(key.as_deref()),
        );
        async move {
            let r = http.get(url).send().await.unwrap();
            (r.status().as_u16(), r.text().await.unwrap())
        }
    };
    let (s, all) = metrics("", None).await;
    assert_eq!(s, 200);
    assert!(all.contains("trellis_tasks{status=\"running\"} 1"), "{all}");
    // one tenant's gauges (its counts, its tool ids) need a key that sees that tenant
    let b_key = key_of(&app, "reader", "b").await;
    let (s, b) = metrics("?tenant=b", Some(b_key.clone())).await;
    assert_eq!(s, 200);
    assert!(b.contains("trellis_tasks{status=\"running\"} 0"), "{b}");
    let (s, body) = metrics("?tenant=default", None).await;
    assert_eq!(s, 401, "no key: {body}");
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap()["error"]["code"],
        "unauthorized"
    );
    let (s, body) = metrics("?tenant=default", Some("trk_not_a_key".into())).await;
    assert_eq!(s, 401, "an unknown key: {body}");
    let (s, body) = metrics("?tenant=default", Some(b_key)).await;
    assert_eq!(s, 404, "another tenant's key: {body}");
    assert!(!body.contains("trellis_tasks"), "{body}");
    let (s, default) = metrics("?tenant=default", Some(common::ADMIN_KEY.into())).await;
    assert_eq!(s, 200);
    assert!(
        default.contains("trellis_tasks{status=\"running\"} 1"),
        "{default}"
    );
    let (s, _) = metrics("?tenant=no%20such", Some(common::ADMIN_KEY.into())).await;
    assert_eq!(s, 400);
}

/// A task id of another tenant is no cursor: `before` reads as an unknown id (an empty page),
/// whether or not the id exists.
#[tokio::test]
async fn another_tenants_task_is_no_cursor() {
    let app = app().await;
    let theirs = app
        .submit(
            json!({"description": "default's", "plan": {"steps": [{"id": "s", "tool": "echo"}]}}),
        )
        .await;
    let b = client_with_key(Some(&key_of(&app, "operator", "b").await));
    for _ in 0..2 {
        let r = b
            .post(app.url("/api/v1/tasks"))
            .json(&json!({"description": "b's", "plan": {"steps": [{"id": "s", "tool": "echo"}]}}))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), 202);
    }
    let page = |before: String| {
        let (http, url) = (
            b.clone(),
            app.url(&format!("/api/v1/tasks?before={before}")),
        );
        async move {
            let r = http.get(url).send().await.unwrap();
            assert_eq!(r.status().as_u16(), 200);
            r.json::<Value>().await.unwrap().as_array().unwrap().len()
        }
    };
    // a page after its own newest task lists its older one
    let (_, mine) = {
        let r = b.get(app.url("/api/v1/tasks")).send().await.unwrap();
        (200, r.json::<Value>().await.unwrap())
    };
    let newest = mine[0]["task_id"].as_str().unwrap().to_string();
    assert_eq!(page(newest).await, 1);
    // default's task, created before b's, would page b's tasks if it were a cursor for b
    assert_eq!(page(theirs.to_string()).await, 0);
    assert_eq!(
        page(Uuid::now_v7().to_string()).await,
        page(theirs.to_string()).await
    );
}

/// The recovery views of one tenant, live and after a prune (the roll-ups keep the tenant):
/// each tenant's reader sees its own recovery, an admin every tenant's, or one with `?tenant=`.
#[tokio::test]
async fn recovery_statistics_per_tenant_live_and_after_a_prune() {
    let app = app().await;
    let b = client_with_key(Some(&key_of(&app, "operator", "b").await));
    let flaky = |n: i64| {
        json!({"description": "flaky", "plan": {"steps": [
            {"id": "f", "tool": "flaky", "parameters": {"fail_times": n}}]}})
    };
    let r = b
        .post(app.url("/api/v1/tasks"))
        .json(&flaky(1))
        .send()
        .await
        .unwrap();
    let b_task: Uuid = r.json::<Value>().await.unwrap()["task_id"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    let a_tasks = [app.submit(flaky(1)).await, app.submit(flaky(2)).await];
    let w = app.worker(|_| {});
    for t in a_tasks.iter().chain([&b_task]) {
        assert_eq!(
            app.wait_done(*t, Duration::from_secs(60)).await["status"],
            "succeeded"
        );
    }
    w.stop().await;
    let before = recovery_seen(&app, &b, "live").await;
    let store = app.store();
    store.age_tasks(2.0 * 86_400.0).await.unwrap();
    assert_eq!(store.prune_finished(86_400.0, 10).await.unwrap(), 3);
    let after = recovery_seen(&app, &b, "after the prune").await;
    assert_eq!(
        after.0["recovery_by_tier"], before.0["recovery_by_tier"],
        "the roll-ups count as the live rows did"
    );
    assert_eq!(after.2["recovery_by_tool"], before.2["recovery_by_tool"]);
}

/// `/stats/recovery` as the admin sees it, for tenant `default` (`?tenant=`), and as tenant
/// `b`'s key sees it; each checked for its actions and tasks.
async fn recovery_seen(app: &TestApp, b: &reqwest::Client, when: &str) -> (Value, Value, Value) {
    let sums = |v: &Value, view: &str, field: &str| -> i64 {
        v[view]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r[field].as_i64().unwrap())
            .sum()
    };
    let counts = |v: &Value| {
        (
            sums(v, "recovery_by_tier", "actions"),
            sums(v, "task_outcomes", "tasks"),
        )
    };
    let (_, all) = app.get("/api/v1/stats/recovery").await;
    let (_, a) = app.get("/api/v1/stats/recovery?tenant=default").await;
    let theirs: Value = b
        .get(app.url("/api/v1/stats/recovery"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(counts(&all), (4, 3), "{when}: {all}");
    assert_eq!(counts(&a), (3, 2), "{when}: {a}");
    assert_eq!(counts(&theirs), (1, 1), "{when}: {theirs}");
    (all, a, theirs)
}

/// A callback needs no key, but one presented with another tenant's key answers 404 and
/// changes nothing; the tool's own call (no key) completes the step.
#[tokio::test]
async fn another_tenants_key_cannot_call_back() {
    use super::waits::{Mode, async_tool, callback_url, worker};
    let app = app().await;
    let urls = async_tool(&app, "job", Mode::Later).await;
    let w = worker(&app);
    let task = app
        .submit(json!({"description": "a", "plan": {"steps": [{"id": "j", "tool": "job"}]}}))
        .await;
    let url = callback_url(&urls, 0).await;
    let b = client_with_key(Some(&key_of(&app, "operator", "b").await));
    for (what, body) in [
        ("heartbeat", json!({"extend_secs": 60})),
        ("complete", json!({"output": {"from": "b"}})),
        ("fail", json!({"error": {"message": "b"}})),
    ] {
        let r = b
            .post(format!("{url}/{what}"))
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), 404, "{what}");
    }
    let r = reqwest::Client::new()
        .post(format!("{url}/complete"))
        .json(&json!({"output": {"from": "the tool"}}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    assert_eq!(
        app.wait_done(task, Duration::from_secs(30)).await["status"],
        "succeeded"
    );
    let (_, r) = app.get(&format!("/api/v1/tasks/{task}/result")).await;
    assert_eq!(r["outputs"]["j"], json!({"from": "the tool"}), "{r}");
    w.stop().await;
}
