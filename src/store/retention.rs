//! Retention: delete finished tasks past their time to live, in bounded batches, after adding
//! their contribution to the recovery statistics to the daily roll-ups (migration
//! `…_retention.sql`), so the statistics views give the same numbers before and after.

use uuid::Uuid;

use super::{Result, Store, Tx};

impl Store {
    /// Delete up to `batch` tasks that ended `succeeded`, `failed` or `cancelled` more than
    /// `ttl_secs` ago (database clock), with every row that belongs to them, in one short
    /// transaction. Tasks in `needs_intervention` and unfinished tasks are never touched; tasks
    /// another worker is pruning are skipped. Returns how many were deleted.
    pub async fn prune_finished(&self, ttl_secs: f64, batch: i64) -> Result<u64> {
        in_tx!(self.pool, |tx| {
            let ids: Vec<Uuid> = sqlx::query_scalar(sql!("retention/lock_expired"))
                .bind(ttl_secs)
                .bind(batch)
                .fetch_all(&mut **tx)
                .await?;
            if ids.is_empty() {
                return Ok(0);
            }
            roll_up(tx, &ids).await?;
            let n = sqlx::query(sql!("retention/delete_tasks"))
                .bind(&ids)
                .execute(&mut **tx)
                .await?
                .rows_affected();
            Ok(n)
        })
    }

    /// Delete up to `batch` webhook deliveries that were delivered or given up more than
    /// `ttl_secs` ago (they outlive their tasks otherwise: no foreign key ties them). Returns
    /// how many.
    pub async fn prune_deliveries(&self, ttl_secs: f64, batch: i64) -> Result<u64> {
        Ok(sqlx::query(sql!("retention/delete_deliveries"))
            .bind(ttl_secs)
            .bind(batch)
            .execute(&self.pool)
            .await?
            .rows_affected())
    }
}

/// Add the tasks' attempts, recovery actions, outcomes, costs and waits to the daily roll-ups (rows in key
/// order, so concurrent prunes lock roll-up rows in the same order).
async fn roll_up(tx: &mut Tx, ids: &[Uuid]) -> Result<()> {
    sqlx::query(sql!("retention/rollup_attempts"))
        .bind(ids)
        .execute(&mut **tx)
        .await?;
    sqlx::query(sql!("retention/rollup_recoveries"))
        .bind(ids)
        .execute(&mut **tx)
        .await?;
    sqlx::query(sql!("retention/rollup_costs"))
        .bind(ids)
        .execute(&mut **tx)
        .await?;
    sqlx::query(sql!("retention/rollup_tasks"))
        .bind(ids)
        .execute(&mut **tx)
        .await?;
    sqlx::query(sql!("retention/rollup_waits"))
        .bind(ids)
        .execute(&mut **tx)
        .await?;
    Ok(())
}
