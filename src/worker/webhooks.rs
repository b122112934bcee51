//! Delivering the webhook outbox: lease due deliveries, `POST` each (signed the Standard
//! Webhooks way, through the outbound guard) with no transaction open, record the try.

use std::time::Duration;

use futures::future::join_all;
use serde_json::json;

use super::WorkerConfig;
use crate::store::webhooks::{Outgoing, Tried};

/// How many deliveries one round leases.
const BATCH: i64 = 32;

/// The delivery loop: rounds back to back while deliveries are due, else a pause.
pub(super) async fn run(s: super::sweep::Sweep) {
    let (store, cfg, stop) = (&s.store, &s.cfg, &s.stop);
    let client = cfg.outbound.client();
    let timeout = Duration::from_millis(cfg.webhooks.timeout_ms);
    let lease = timeout.as_secs_f64() + 30.0;
    loop {
        let due = match store.claim_deliveries(BATCH, lease).await {
            Ok(d) => d,
            Err(e) => {
                tracing::warn!(error = %e, "could not lease webhook deliveries");
                Vec::new()
            }
        };
        if due.is_empty() {
            if !s.pause(Duration::from_millis(250), Duration::ZERO).await {
                return;
            }
            continue;
        }
        let sends = due.iter().map(|d| async {
            let tried = send(&client, cfg, d, timeout).await;
            if let Err(e) = store.record_delivery(d, &tried).await {
                tracing::warn!(delivery = %d.id, error = %e,
                    "could not record a webhook try; its lease will run out and it goes again");
            }
        });
        join_all(sends).await;
        if stop.is_cancelled() {
            return;
        }
    }
}

/// The body a receiver gets (CONTRACT.md).
pub fn body(d: &Outgoing) -> serde_json::Value {
    json!({
        "type": d.kind,
        "timestamp": d.event_at,
        "data": {"task_id": d.task_id, "seq": d.seq, "payload": d.payload},
    })
}

async fn send(
    client: &reqwest::Client,
    cfg: &WorkerConfig,
    d: &Outgoing,
    timeout: Duration,
) -> Tried {
    let w = &cfg.webhooks;
    let failed = |status: Option<u16>, error: String| {
        let exp = (d.attempts.max(1) - 1).min(30) as u32;
        let ms = w
            .backoff_ms
            .saturating_mul(1u64 << exp)
            .min(w.backoff_max_ms);
        Tried::Failed {
            status,
            error,
            max_attempts: w.max_attempts.min(i32::MAX as u32) as i32,
            backoff_secs: ms as f64 / 1000.0,
        }
    };
    let secret = match d.secret.as_deref().or(w.signing_secret.as_deref()) {
        Some(s) => s,
        None => {
            return failed(
                None,
                "no signing secret: set [webhooks] signing_secret".into(),
            );
        }
    };
    let signer = match standardwebhooks::Webhook::new(secret) {
        Ok(s) => s,
        Err(e) => return failed(None, format!("the signing secret is unusable: {e}")),
    };
    let url = match reqwest::Url::parse(&d.url) {
        Ok(u) => u,
        Err(e) => return failed(None, format!("bad url: {e}")),
    };
    if let Err(b) = cfg.outbound.check_url(&url) {
        return failed(None, format!("blocked destination: {b}"));
    }
    let payload = body(d).to_string();
    let msg_id = d.id.to_string();
    let ts = chrono::Utc::now().timestamp();
    let signature = match signer.sign(&msg_id, ts, payload.as_bytes()) {
        Ok(s) => s,
        Err(e) => return failed(None, format!("could not sign: {e}")),
    };
    let sent = client
        .post(url)
        .timeout(timeout)
        .header("content-type", "application/json")
        .header("webhook-id", &msg_id)
        .header("webhook-timestamp", ts.to_string())
        .header("webhook-signature", signature)
        .body(payload)
        .send()
        .await;
    match sent {
        Ok(r) if r.status().is_success() => Tried::Delivered(r.status().as_u16()),
        Ok(r) => failed(Some(r.status().as_u16()), format!("HTTP {}", r.status())),
        Err(e) => {
            let why = match crate::net::blocked_in(&e) {
                Some(b) => format!("blocked destination: {b}"),
                None => crate::net::transport_error_kind(&e).to_string(),
            };
            failed(None, why)
        }
    }
}
