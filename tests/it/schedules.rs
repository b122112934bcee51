//! `/schedules`: registry, validation, next fire times in a time zone, pause, trigger.

use reqwest::StatusCode;
use serde_json::json;
use trellis::testkit::spawn_app;

#[tokio::test]
async fn schedules_are_checked_listed_paused_and_triggered() {
    let app = spawn_app().await;
    let plan = json!({"steps": [{"id": "e", "tool": "echo"}]});
    for (bad, why) in [
        (
            json!({"id": "s", "cron": "every day", "plan": plan}),
            "cron",
        ),
        (
            json!({"id": "s", "cron": "0 0 * * *", "timezone": "Mars/Base", "plan": plan}),
            "timezone",
        ),
        (
            json!({"id": "s", "cron": "0 0 * * *"}),
            "template or a plan",
        ),
        (
            json!({"id": "s", "cron": "0 0 * * *", "plan": plan, "template": "t"}),
            "not both",
        ),
        (
            json!({"id": "s", "cron": "0 0 * * *", "template": "nope"}),
            "not registered",
        ),
        (
            json!({"id": "s", "cron": "0 0 * * *", "plan": {"steps": [{"id": "e", "tool": "nope"}]}}),
            "nope",
        ),
        (
            json!({"id": "s", "cron": "0 0 * * *", "plan": plan, "overlap": "maybe"}),
            "overlap",
        ),
        (
            json!({"id": "bad id", "cron": "0 0 * * *", "plan": plan}),
            "id",
        ),
    ] {
        let (s, v) = app.post("/api/v1/schedules", &bad).await;
        assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{bad}: {v}");
        assert!(
            v["error"]["message"].as_str().unwrap().contains(why),
            "{why}: {v}"
        );
    }
    let (s, _) = app.get("/api/v1/schedules").await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(
        app.get("/api/v1/schedules").await.1,
        json!([]),
        "nothing was stored"
    );

    let (s, v) = app
        .post(
            "/api/v1/schedules",
            &json!({"id": "tokyo-midnight", "cron": "0 0 * * *", "timezone": "Asia/Tokyo",
                    "plan": plan, "overlap": "skip", "priority": 5}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
    let times: Vec<chrono::DateTime<chrono::Utc>> = v["next_fire_times"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap().parse().unwrap())
        .collect();
    assert_eq!(times.len(), 5);
    for t in &times {
        assert_eq!(
            t.format("%H:%M:%S").to_string(),
            "15:00:00",
            "midnight in Tokyo is 15:00 UTC"
        );
    }
    assert!(times.windows(2).all(|w| (w[1] - w[0]).num_hours() == 24));
    let (s, _) = app
        .post(
            "/api/v1/schedules",
            &json!({"id": "tokyo-midnight", "cron": "0 0 * * *", "plan": plan}),
        )
        .await;
    assert_eq!(s, StatusCode::CONFLICT);

    // pause
    let r = app
        .http
        .patch(app.url("/api/v1/schedules/tokyo-midnight"))
        .json(&json!({"enabled": false}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let v: serde_json::Value = r.json().await.unwrap();
    assert_eq!(v["enabled"], false);
    assert_eq!(v["next_fire_times"], json!([]));
    assert_eq!(v["priority"], 5, "a patch keeps what it does not name");

    // a manual trigger submits one task now, marked as the schedule's
    let (s, v) = app
        .post("/api/v1/schedules/tokyo-midnight/trigger", &json!({}))
        .await;
    assert_eq!(s, StatusCode::ACCEPTED, "{v}");
    let task = v["task_id"].as_str().unwrap();
    let (key, schedule): (String, String) =
        sqlx::query_as("SELECT idempotency_key, schedule_id FROM tasks WHERE id = $1::uuid")
            .bind(task)
            .fetch_one(app.store().pool())
            .await
            .unwrap();
    assert!(key.starts_with("schedule:tokyo-midnight:"), "{key}");
    assert_eq!(schedule, "tokyo-midnight");

    let r = app
        .http
        .delete(app.url("/api/v1/schedules/tokyo-midnight"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::NO_CONTENT);
    let (s, _) = app.get("/api/v1/schedules/tokyo-midnight").await;
    assert_eq!(s, StatusCode::NOT_FOUND);
}
