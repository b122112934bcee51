-- name: map/items_ended
-- Items that ended ($1: succeeded or given up; others are ignored) move their maps on: each
-- releases its map's next item without a step (the window slides; items a replan kept are
-- skipped), and a map whose items have all ended is returned for its join (an agent step's,
-- `wakes`, for its next turn). Under the tasks'
-- row locks, so the counters' read and write agree.
WITH e AS (
    SELECT s.map_step_id AS id, count(*)::int AS n,
           (count(*) FILTER (WHERE s.status = 'skipped'))::int AS gave_up
    FROM steps s
    WHERE s.id = ANY($1) AND s.map_step_id IS NOT NULL AND s.status IN ('succeeded', 'skipped')
    GROUP BY s.map_step_id
), ms AS MATERIALIZED (
    -- the maps, read once by key (joined to the released items, a planner that thinks steps
    -- small hashes the whole table)
    SELECT ms.* FROM e JOIN steps ms ON ms.id = e.id
), nxt AS (
    -- the next items: the ones after the cursor, or, in a map a replan kept items of, the
    -- next ones without a step (probed in order, stopping at the n-th)
    SELECT e.id AS step_id, g.i
    FROM e JOIN step_maps m ON m.step_id = e.id JOIN steps ms ON ms.id = e.id
    CROSS JOIN LATERAL generate_series(m.released, least(m.total, m.released + e.n) - 1) AS g(i)
    WHERE ms.status = 'waiting' AND m.kept = 0
    UNION ALL
    SELECT e.id, x.i
    FROM e JOIN step_maps m ON m.step_id = e.id JOIN steps ms ON ms.id = e.id
    CROSS JOIN LATERAL (
        SELECT g.i FROM generate_series(m.released, m.total - 1) AS g(i)
        WHERE NOT EXISTS (SELECT 1 FROM steps k
                          WHERE k.task_id = ms.task_id AND k.plan_version = ms.plan_version
                            AND k.step_key = ms.step_key || '[' || g.i || ']' AND k.live)
        LIMIT e.n) x
    WHERE ms.status = 'waiting' AND m.kept > 0
), bumped AS (
    UPDATE step_maps m
    SET ended = m.ended + e.n, given_up = m.given_up + e.gave_up,
        released = coalesce((SELECT max(n.i) + 1 FROM nxt n WHERE n.step_id = e.id), m.released)
    FROM e
    WHERE m.step_id = e.id
    RETURNING m.step_id, m.task_id, m.ended, m.total, m.wakes
), released AS (
    INSERT INTO steps (id, task_id, plan_version, step_key, position, name, tool, parameters,
                       dependencies, optional, status, priority, map_step_id, item_index, item)
    SELECT gen_random_uuid(), ms.task_id, ms.plan_version, ms.step_key || '[' || n.i || ']',
           ms.position, ms.name, coalesce(ms.tool_override, ms.tool),
           ms.parameters || ms.param_overrides, '{}',
           ms.map ->> 'on_item_failure' = 'continue', 'ready', ms.priority, ms.id, n.i, mi.item
    FROM nxt n JOIN ms ON ms.id = n.step_id
         JOIN map_items mi ON mi.step_id = n.step_id AND mi.idx = n.i
    ON CONFLICT (task_id, plan_version, step_key) WHERE live DO NOTHING
)
-- (`released` runs whether or not it is read: a data-modifying WITH always does)
SELECT b.step_id, b.task_id, b.ended >= b.total AS complete, b.wakes
FROM bumped b
