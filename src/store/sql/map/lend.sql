-- name: map/lend
-- A map's item ($1) that went to wait out its backoff lends its place: the map's next item is
-- released when the map's window is its task's own cap (its `max_parallel` unset or not
-- below `max_concurrent_steps`: the claim keeps the items running at once within the cap,
-- whatever is released), fewer items than the window are live and not waiting, and fewer
-- than $2 windows are live in all (a claim queue sync reads them), and its tool's failures in
-- a row, fleet-wide, are below $3 (its breaker's threshold: past it the service may be down,
-- and no more items are sent to it) or a success reset such a count within the last $4 seconds
-- (its cool-down) and its circuit is closed (calls that fail and then pass on their own retry:
-- the service is up, its calls are flaky). Under the task's row lock; a map a replan kept
-- items of lends nothing. Returns the released item's index, if any.
WITH m AS MATERIALIZED (
    SELECT m.step_id, m.released, ms.task_id, ms.plan_version, ms.step_key, ms.position,
           ms.name, coalesce(ms.tool_override, ms.tool) AS tool,
           ms.parameters || ms.param_overrides AS parameters,
           ms.map ->> 'on_item_failure' = 'continue' AS tolerant, ms.priority
    FROM steps i
    JOIN step_maps m ON m.step_id = i.map_step_id
    JOIN steps ms ON ms.id = m.step_id
    JOIN tasks t ON t.id = ms.task_id
    WHERE i.id = $1 AND ms.status = 'waiting' AND m.kept = 0 AND m.released < m.total
      AND coalesce((SELECT c.consecutive_failures < $3
                           OR (c.open_until IS NULL
                               AND c.healed_at IS NOT NULL
                               AND c.healed_at > now() - make_interval(secs => $4))
                    FROM tool_circuits c
                    WHERE c.tool_id = coalesce(i.tool_override, i.tool)), true)
      AND m.max_parallel >= t.max_concurrent_steps
      AND m.released - m.ended < $2 * m.max_parallel
      AND m.released - m.ended
          - (SELECT count(*) FROM steps w
             WHERE w.task_id = ms.task_id AND w.status = 'ready' AND w.map_step_id = m.step_id
               AND w.run_after > now()) < m.max_parallel
), bumped AS (
    UPDATE step_maps s SET released = s.released + 1, lent = s.lent + 1
    FROM m WHERE s.step_id = m.step_id
    RETURNING s.step_id
), released AS (
    INSERT INTO steps (id, task_id, plan_version, step_key, position, name, tool, parameters,
                       dependencies, optional, status, priority, map_step_id, item_index, item)
    SELECT gen_random_uuid(), m.task_id, m.plan_version, m.step_key || '[' || m.released || ']',
           m.position, m.name, m.tool, m.parameters, '{}', m.tolerant, 'ready', m.priority,
           m.step_id, m.released, mi.item
    FROM m JOIN map_items mi ON mi.step_id = m.step_id AND mi.idx = m.released
    ON CONFLICT (task_id, plan_version, step_key) WHERE live DO NOTHING
)
SELECT m.released FROM m
