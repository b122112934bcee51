-- name: fair/age
-- Priority aging ([fairness] aging_interval_secs $1, aging_max_boost $2): each queued task that
-- has waited an interval since it was submitted or last raised rises one priority level, at most
-- $2 levels, up to $3 tasks a pass. Its claim queue entries move with it. The claim's order is
-- untouched (priority, then pass): aging is this bounded pass, never a sort at claim time.
-- Only one worker of a fleet runs a pass at a time (a transaction-scoped advisory lock).
WITH go AS MATERIALIZED (
    SELECT pg_try_advisory_xact_lock(7345001) AS ok
), due AS MATERIALIZED (
    SELECT t.id FROM tasks t
    WHERE (SELECT ok FROM go)
      AND t.id = ANY(ARRAY(SELECT DISTINCT q.task_id FROM claim_queue q
                           WHERE q.task_created_at <= now() - make_interval(secs => $1)))
      AND t.status = 'running' AND t.priority_boost < $2
      AND coalesce(t.aged_at, t.created_at) <= now() - make_interval(secs => $1)
    ORDER BY coalesce(t.aged_at, t.created_at), t.id
    LIMIT $3
    FOR NO KEY UPDATE OF t SKIP LOCKED
), raised AS (
    UPDATE tasks t SET priority = t.priority + 1, priority_boost = t.priority_boost + 1,
                       aged_at = now()
    FROM due WHERE t.id = due.id
    RETURNING t.id, t.priority
), queued AS (
    UPDATE claim_queue q SET priority = r.priority
    FROM raised r WHERE q.task_id = r.id
)
SELECT count(*) FROM raised
