//! The worker registry: who is running, since when, last heartbeat.

use uuid::Uuid;

use super::{Result, Store};

#[derive(Debug, Clone)]
pub struct WorkerInfo {
    pub id: Uuid,
    pub host: String,
    pub pid: i32,
    pub concurrency: i32,
}

impl Store {
    pub async fn register_worker(&self, w: &WorkerInfo) -> Result<()> {
        sqlx::query(
            "INSERT INTO workers (id, host, pid, concurrency) VALUES ($1, $2, $3, $4)
             ON CONFLICT (id) DO UPDATE SET host = $2, pid = $3, concurrency = $4,
                 started_at = now(), last_heartbeat = now(), stopped_at = NULL",
        )
        .bind(w.id)
        .bind(&w.host)
        .bind(w.pid)
        .bind(w.concurrency)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    pub async fn stop_worker(&self, id: Uuid) -> Result<()> {
        sqlx::query("UPDATE workers SET stopped_at = now() WHERE id = $1")
            .bind(id)
            .execute(&self.pool)
            .await?;
        Ok(())
    }
}
