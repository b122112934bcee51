-- name: queue/sync
WITH t AS MATERIALIZED (
    SELECT t.id, t.priority, t.fair_pass, t.created_at, t.status, t.plan_version,
           greatest(t.max_concurrent_steps
                    - (SELECT count(*) FROM steps r WHERE r.task_id = t.id AND r.status = 'running'), 0) AS room
    FROM tasks t WHERE t.id = ANY($1)
), want AS MATERIALIZED (
    SELECT s.id AS step_id, t.id AS task_id, t.priority, t.fair_pass, t.created_at, s.position, s.tool, s.run_after
    FROM t CROSS JOIN LATERAL (
        SELECT s.id, s.position, s.run_after, coalesce(s.tool_override, s.tool) AS tool
        FROM steps s WHERE s.task_id = t.id AND s.plan_version = t.plan_version AND s.status = 'ready'
        ORDER BY s.run_after, s.position, s.item_index LIMIT t.room) s
    WHERE t.status = 'running'
), have AS MATERIALIZED (
    SELECT q.step_id, q.tool, q.run_after FROM claim_queue q WHERE q.task_id = ANY($1)
), gone AS (
    DELETE FROM claim_queue q
    WHERE q.task_id = ANY($1)
      AND NOT EXISTS (SELECT 1 FROM want w
                      WHERE w.step_id = q.step_id AND w.tool = q.tool AND w.run_after = q.run_after)
)
INSERT INTO claim_queue (step_id, task_id, priority, pass, task_created_at, position, tool, lane,
                         run_after, delayed, slot)
SELECT w.step_id, w.task_id, w.priority, w.fair_pass, w.created_at, w.position, w.tool,
       CASE WHEN EXISTS (SELECT 1 FROM tool_buckets b WHERE b.tool_id = w.tool) THEN w.tool ELSE '' END,
       w.run_after, w.run_after > now(),
       -- the ring's current slot, read once (the column's default reads it for every row)
       (SELECT slot FROM claim_ring)
FROM want w
WHERE NOT EXISTS (SELECT 1 FROM have h
                  WHERE h.step_id = w.step_id AND h.tool = w.tool AND h.run_after = w.run_after)
