-- name: map/start
-- The expanded map step's ($1) list ($2) and window ($3): in a version a replan made, items
-- that succeeded in an earlier version with the same item, tool and parameters are kept
-- (copied as succeeded, not run again), and the first $3 of the others are inserted ready.
-- Items have no dependencies: the claim would bring each the map's inputs (often the whole
-- list); a placeholder of an item that reads a dependency's output is read when it runs.
WITH m AS (
    SELECT s.id, s.task_id, s.plan_version, s.step_key, s.position, s.name,
           coalesce(s.tool_override, s.tool) AS tool, s.parameters || s.param_overrides AS parameters,
           s.dependencies, s.priority, s.map ->> 'on_item_failure' = 'continue' AS tolerant
    FROM steps s WHERE s.id = $1
), kept AS (
    SELECT i, o.output, o.attempts
    FROM m CROSS JOIN generate_series(0, jsonb_array_length($2) - 1) AS i
    CROSS JOIN LATERAL (
        SELECT o.output, o.attempts FROM steps o
        WHERE o.task_id = m.task_id AND o.plan_version < m.plan_version
          AND o.step_key = m.step_key || '[' || i || ']' AND o.status = 'succeeded'
          AND o.item = $2 -> i AND o.tool = m.tool AND o.parameters = m.parameters
        ORDER BY o.plan_version DESC LIMIT 1) o
    -- only a replan (recovery) keeps them: a rerun asked for the map to run again
    WHERE m.plan_version > 1
      AND EXISTS (SELECT 1 FROM plans p WHERE p.task_id = m.task_id AND p.version = m.plan_version
                    AND p.origin LIKE 'replan:%')
), first AS (
    SELECT g.i FROM generate_series(0, jsonb_array_length($2) - 1) AS g(i)
    WHERE NOT EXISTS (SELECT 1 FROM kept k WHERE k.i = g.i)
    ORDER BY g.i LIMIT $3
), progress AS (
    INSERT INTO step_maps (step_id, task_id, total, released, ended, max_parallel, kept)
    SELECT m.id, m.task_id, jsonb_array_length($2),
           coalesce((SELECT max(f.i) + 1 FROM first f), jsonb_array_length($2)),
           (SELECT count(*) FROM kept), $3, (SELECT count(*) FROM kept)
    FROM m
    RETURNING step_id, ended, total
), listed AS (
    INSERT INTO map_items (step_id, idx, item)
    SELECT p.step_id, e.ord - 1, e.item
    FROM progress p CROSS JOIN jsonb_array_elements($2) WITH ORDINALITY AS e(item, ord)
), items AS (
    INSERT INTO steps (id, task_id, plan_version, step_key, position, name, tool, parameters,
                       dependencies, optional, status, priority, map_step_id, item_index, item,
                       output, attempts, finished_at)
    SELECT gen_random_uuid(), m.task_id, m.plan_version, m.step_key || '[' || x.i || ']',
           m.position, m.name, m.tool, m.parameters, '{}', m.tolerant, x.status,
           m.priority, m.id, x.i, $2 -> x.i, x.output, x.attempts, x.finished_at
    FROM m CROSS JOIN (
        SELECT f.i, 'ready' AS status, NULL::jsonb AS output, 0 AS attempts,
               NULL::timestamptz AS finished_at
        FROM first f
        UNION ALL
        SELECT k.i, 'succeeded', k.output, k.attempts, now() FROM kept k
    ) x
)
SELECT p.ended = p.total AS complete, p.ended::bigint AS kept FROM progress p
