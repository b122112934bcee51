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
            let ids: Vec<Uuid> = sqlx::query_scalar(
                "SELECT id FROM tasks
                 WHERE status IN ('succeeded', 'failed', 'cancelled')
                   AND finished_at < now() - make_interval(secs => $1)
                 ORDER BY finished_at LIMIT $2
                 FOR UPDATE SKIP LOCKED",
            )
            .bind(ttl_secs)
            .bind(batch)
            .fetch_all(&mut **tx)
            .await?;
            if ids.is_empty() {
                return Ok(0);
            }
            roll_up(tx, &ids).await?;
            let n = sqlx::query("DELETE FROM tasks WHERE id = ANY($1)")
                .bind(&ids)
                .execute(&mut **tx)
                .await?
                .rows_affected();
            Ok(n)
        })
    }
}

/// Add the tasks' attempts, recovery actions and outcomes to the daily roll-ups (rows in key
/// order, so concurrent prunes lock roll-up rows in the same order).
async fn roll_up(tx: &mut Tx, ids: &[Uuid]) -> Result<()> {
    sqlx::query(
        "INSERT INTO attempt_rollups AS r (day, tool, status, error_category, attempts)
         SELECT date_trunc('day', finished_at)::date, tool, status, error_category, count(*)
         FROM attempts WHERE task_id = ANY($1) GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4
         ON CONFLICT (day, tool, status, error_category)
         DO UPDATE SET attempts = r.attempts + excluded.attempts",
    )
    .bind(ids)
    .execute(&mut **tx)
    .await?;
    sqlx::query(
        "INSERT INTO recovery_rollups AS r (day, tool, category, tier, action, actions,
                                            succeeded_after, saved, saved_ms_sum, saved_ms_count)
         SELECT date_trunc('day', failed_at)::date, tool, category, tier, action, count(*),
                count(*) FILTER (WHERE succeeded_after), count(*) FILTER (WHERE saved),
                coalesce(sum(ms_to_recover) FILTER (WHERE saved), 0),
                count(ms_to_recover) FILTER (WHERE saved)
         FROM recovery_outcomes WHERE task_id = ANY($1)
         GROUP BY 1, 2, 3, 4, 5 ORDER BY 1, 2, 3, 4, 5
         ON CONFLICT (day, tool, category, tier, action) DO UPDATE SET
             actions = r.actions + excluded.actions,
             succeeded_after = r.succeeded_after + excluded.succeeded_after,
             saved = r.saved + excluded.saved,
             saved_ms_sum = r.saved_ms_sum + excluded.saved_ms_sum,
             saved_ms_count = r.saved_ms_count + excluded.saved_ms_count",
    )
    .bind(ids)
    .execute(&mut **tx)
    .await?;
    sqlx::query(
        "INSERT INTO task_rollups AS r (day, status, tasks, attempts, failures, tasks_with_recovery,
                                        succeeded_after_recovery, repairs, replans, score_sum,
                                        score_count, duration_ms_sum, duration_ms_count)
         SELECT day, status, count(*), sum(attempts), sum(failures),
                count(*) FILTER (WHERE recovered),
                count(*) FILTER (WHERE recovered AND status = 'succeeded'),
                sum(repairs), sum(replans),
                coalesce(sum(final_score), 0), count(final_score),
                coalesce(sum(duration_ms), 0), count(duration_ms)
         FROM task_rollup_rows WHERE id = ANY($1)
         GROUP BY 1, 2 ORDER BY 1, 2
         ON CONFLICT (day, status) DO UPDATE SET
             tasks = r.tasks + excluded.tasks,
             attempts = r.attempts + excluded.attempts,
             failures = r.failures + excluded.failures,
             tasks_with_recovery = r.tasks_with_recovery + excluded.tasks_with_recovery,
             succeeded_after_recovery = r.succeeded_after_recovery + excluded.succeeded_after_recovery,
             repairs = r.repairs + excluded.repairs,
             replans = r.replans + excluded.replans,
             score_sum = r.score_sum + excluded.score_sum,
             score_count = r.score_count + excluded.score_count,
             duration_ms_sum = r.duration_ms_sum + excluded.duration_ms_sum,
             duration_ms_count = r.duration_ms_count + excluded.duration_ms_count",
    )
    .bind(ids)
    .execute(&mut **tx)
    .await?;
    Ok(())
}
