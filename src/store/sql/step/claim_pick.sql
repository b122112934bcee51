-- name: step/claim_pick
-- The checked claim's first statement (a task cap, a limited tool, a key's max_running or a
-- tenant's cap in play): lock the candidate entries, their tasks, the limited tools, the
-- limited key patterns and the capped tenants, all without waiting; step/claim_checked counts
-- with a later snapshot and claims.
WITH admit AS MATERIALIZED (
    -- tasks without running steps this claim may start (-1: no cap); counted after the
    -- admission lock was taken ($4), by an earlier statement
    SELECT CASE WHEN $3 <= 0 THEN -1 WHEN NOT $4 THEN 0
                ELSE greatest($3 - (SELECT count(DISTINCT task_id) FROM running_steps), 0) END AS n
), lanes AS MATERIALIZED (
    -- the limited tools with claimable entries, locked so that the claim's count of their
    -- running steps (the next statement, a later snapshot) is exact; a tool another claim
    -- holds is skipped (its steps wait): no lock wait, no deadlock
    SELECT b.tool_id FROM tool_buckets b
    WHERE EXISTS (SELECT 1 FROM claim_queue q WHERE q.lane = b.tool_id AND NOT q.delayed)
       OR EXISTS (SELECT 1 FROM claim_queue q
                  WHERE q.delayed AND q.run_after <= now() AND q.lane = b.tool_id)
    ORDER BY b.tool_id
    FOR UPDATE OF b SKIP LOCKED
), room AS MATERIALIZED (
    -- how far to walk each locked tool's lane: its room as this snapshot sees it
    SELECT l.tool_id, greatest(least(trellis_tool_room(t, b), $1), 0) AS n
    FROM lanes l JOIN tools t ON t.id = l.tool_id JOIN tool_buckets b ON b.tool_id = l.tool_id
), head AS MATERIALIZED (
    -- without the admission lock under a cap, only tasks already running steps may get steps:
    -- the head is left to the claim that holds it
    SELECT q.step_id, q.task_id FROM claim_queue q
    WHERE q.lane = '' AND NOT q.delayed AND (SELECT n FROM admit) <> 0
    ORDER BY q.lane, q.priority DESC, q.pass, q.task_created_at, q.task_id, q.position
    LIMIT $1
    FOR UPDATE SKIP LOCKED
), due AS MATERIALIZED (
    SELECT q.step_id, q.task_id FROM claim_queue q
    WHERE q.delayed AND q.run_after <= now() AND (SELECT n FROM admit) <> 0
      AND (q.lane = '' OR q.lane IN (SELECT tool_id FROM lanes))
    ORDER BY q.run_after
    LIMIT $1
    FOR UPDATE SKIP LOCKED
), limited AS MATERIALIZED (
    SELECT x.step_id, x.task_id FROM room CROSS JOIN LATERAL (
        SELECT q.step_id, q.task_id FROM claim_queue q
        WHERE q.lane = room.tool_id AND NOT q.delayed AND (SELECT n FROM admit) <> 0
        ORDER BY q.lane, q.priority DESC, q.pass, q.task_created_at, q.task_id, q.position
        LIMIT room.n
        FOR UPDATE SKIP LOCKED) x
), active AS MATERIALIZED (
    -- under a task cap, the entries of tasks already running steps (they need no admission),
    -- however far behind the head they are
    SELECT x.step_id, x.task_id
    FROM (SELECT DISTINCT task_id FROM running_steps WHERE $3 > 0) r
    CROSS JOIN LATERAL (
        SELECT q.step_id, q.task_id FROM claim_queue q
        WHERE q.task_id = r.task_id AND (NOT q.delayed OR q.run_after <= now())
          AND (q.lane = '' OR q.lane IN (SELECT tool_id FROM lanes))
        FOR UPDATE SKIP LOCKED) x
), cand AS MATERIALIZED (
    SELECT step_id, task_id FROM head UNION SELECT step_id, task_id FROM due
    UNION SELECT step_id, task_id FROM limited UNION SELECT step_id, task_id FROM active
), locked AS MATERIALIZED (
    SELECT t.id FROM tasks t,
         (SELECT set_config('synchronous_commit',
                 CASE WHEN $2 THEN 'off' ELSE current_setting('synchronous_commit') END, true)) AS commit_mode
    -- by primary key (an id list, never a join the planner could turn into a scan)
    WHERE t.id = ANY(ARRAY(SELECT DISTINCT task_id FROM cand))
    ORDER BY t.id
    FOR NO KEY UPDATE OF t SKIP LOCKED
), keyed AS MATERIALIZED (
    -- the key patterns with a max_running that govern the locked tasks, locked so that the next
    -- statement's count of each key's running steps is exact; a pattern another claim holds is
    -- skipped (its keys' steps wait for the next claim)
    SELECT l.pattern FROM key_limits l
    WHERE l.max_running IS NOT NULL
      AND l.pattern = ANY(ARRAY(SELECT DISTINCT t.key_pattern FROM tasks t
                                WHERE t.id IN (SELECT id FROM locked)
                                  AND t.key_pattern IS NOT NULL))
    ORDER BY l.pattern
    FOR UPDATE OF l SKIP LOCKED
), key_defaults AS MATERIALIZED (
    -- with `[fairness] default_max_running` ($7; 0: none), the keys of the locked tasks that
    -- no pattern caps, each locked by a transaction-scoped advisory lock tried without waiting
    SELECT x.k FROM (SELECT DISTINCT t.concurrency_key AS k FROM tasks t
                     WHERE $7::int > 0 AND t.id IN (SELECT id FROM locked)
                       AND t.concurrency_key IS NOT NULL
                       AND NOT EXISTS (SELECT 1 FROM key_limits l
                                       WHERE l.pattern = t.key_pattern
                                         AND l.max_running IS NOT NULL)) x
    WHERE pg_try_advisory_xact_lock(7345003, hashtext(x.k))
), tenanted AS MATERIALIZED (
    -- the capped tenants of the locked tasks ($5, $6: the `[tenants]` defaults; a `tenants`
    -- row), each locked by a transaction-scoped advisory lock tried without waiting, so that
    -- the next statement's count of the tenant's running work is exact; a tenant another
    -- claim holds starts nothing in this claim
    -- (with no cap configured, a one-time filter: the tasks are not read again)
    SELECT x.tenant FROM (SELECT DISTINCT t.tenant FROM tasks t
                          WHERE ($5::int > 0 OR $6::int > 0 OR EXISTS (SELECT 1 FROM tenants))
                            AND t.id IN (SELECT id FROM locked)) x
    WHERE CASE WHEN $5::int > 0 OR $6::int > 0
                    OR EXISTS (SELECT 1 FROM tenants n WHERE n.tenant = x.tenant)
               THEN pg_try_advisory_xact_lock(7345002, hashtext(x.tenant)) ELSE false END
)
SELECT coalesce((SELECT array_agg(step_id) FROM cand WHERE task_id IN (SELECT id FROM locked)),
                '{}') AS steps,
       coalesce((SELECT array_agg(id ORDER BY id) FROM locked), '{}') AS tasks,
       coalesce((SELECT array_agg(tool_id ORDER BY tool_id) FROM lanes), '{}') AS tools,
       (SELECT n FROM admit) AS admit,
       coalesce((SELECT array_agg(pattern ORDER BY pattern) FROM keyed), '{}') AS patterns,
       coalesce((SELECT array_agg(tenant::text ORDER BY tenant) FROM tenanted), '{}') AS tenants,
       coalesce((SELECT array_agg(k ORDER BY k) FROM key_defaults), '{}') AS default_keys
