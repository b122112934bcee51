-- name: agent/calls
-- A turn's tool calls (keys $2, tools $3, parameters $4, items $5) inserted ready as items of
-- the agent step ($1), tolerant (a call that fails past its recovery is given up, and the model
-- is told): its `step_maps` row counts them (released at once: the model chose them together),
-- and the item that ends the last of them wakes the agent step (`wakes`).
WITH a AS (
    SELECT s.id, s.task_id, s.plan_version, s.position, s.name, s.priority
    FROM steps s WHERE s.id = $1
), m AS (
    INSERT INTO step_maps (step_id, task_id, total, released, ended, max_parallel, kept, wakes)
    SELECT a.id, a.task_id, cardinality($2::text[]), cardinality($2::text[]), 0,
           greatest(cardinality($2::text[]), 1), 0, true
    FROM a
    ON CONFLICT (step_id) DO UPDATE
    SET total = step_maps.total + EXCLUDED.total, released = step_maps.released + EXCLUDED.released,
        max_parallel = greatest(step_maps.max_parallel, EXCLUDED.max_parallel)
    RETURNING step_maps.total - cardinality($2::text[]) AS base
)
INSERT INTO steps (id, task_id, plan_version, step_key, position, name, tool, parameters,
                   dependencies, optional, status, priority, map_step_id, item_index, item)
SELECT gen_random_uuid(), a.task_id, a.plan_version, c.key, a.position, a.name, c.tool, c.params,
       '{}', true, 'ready', a.priority, a.id, m.base + c.ord::int - 1, c.item
FROM a CROSS JOIN m
CROSS JOIN unnest($2::text[], $3::text[], $4::jsonb[], $5::jsonb[]) WITH ORDINALITY AS c(key, tool, params, item, ord)
