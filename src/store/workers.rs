//! The worker registry: who is running, since when, last heartbeat.

use uuid::Uuid;

use super::{Result, Store};

#[derive(Debug, Clone)]
pub struct WorkerInfo {
    pub id: Uuid,
    pub host: String,
    pub pid: i32,
    pub concurrency: i32,
    /// The worker's lease; its heartbeat renews it well before it runs out.
    pub lease_secs: f64,
}

/// A live worker as `GET /api/v1/workers` lists it.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct WorkerRow {
    pub id: Uuid,
    pub host: String,
    pub pid: i32,
    pub concurrency: i32,
    pub in_flight: i32,
    pub started_at: chrono::DateTime<chrono::Utc>,
    pub last_heartbeat: chrono::DateTime<chrono::Utc>,
}

impl Store {
    /// Register (or re-register) a worker, and forget workers gone for more than a day, so the
    /// registry stays the size of the recent fleet.
    /// Register (or re-register) a worker; returns the deployment's call key secret
    /// ([`crate::domain::call_key`]).
    pub async fn register_worker(&self, w: &WorkerInfo) -> Result<Vec<u8>> {
        sqlx::query(sql!("worker/forget_stale"))
            .execute(&self.pool)
            .await?;
        Ok(sqlx::query_scalar(sql!("worker/register"))
            .bind(w.id)
            .bind(&w.host)
            .bind(w.pid)
            .bind(w.concurrency)
            .bind(w.lease_secs)
            .fetch_one(&self.pool)
            .await?)
    }

    pub async fn stop_worker(&self, id: Uuid) -> Result<()> {
        sqlx::query(sql!("worker/stop"))
            .bind(id)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// Workers whose heartbeat is younger than two leases of `lease_secs`: the fleet's size as
    /// its members pace their sweeps by it.
    pub async fn fleet_size(&self, lease_secs: f64) -> Result<i64> {
        Ok(sqlx::query_scalar(
            "SELECT count(*) FROM workers WHERE stopped_at IS NULL \
             AND last_heartbeat > now() - make_interval(secs => $1 * 2)",
        )
        .bind(lease_secs)
        .fetch_one(&self.pool)
        .await?)
    }

    /// The live fleet: workers not stopped whose last heartbeat is younger than their lease,
    /// longest running first. The table holds the fleet of the last day (see
    /// [`Store::register_worker`]).
    pub async fn live_workers(&self) -> Result<Vec<WorkerRow>> {
        Ok(sqlx::query_as(sql!("worker/list"))
            .fetch_all(&self.pool)
            .await?)
    }
}
