-- name: testing/claim_queue_disagreements
-- The claim queue recomputed from its definition (queue/sync's, for every task) against the
-- table: an entry the definition wants and the table lacks ('missing'), or an entry the table
-- holds and the definition does not want ('extra'). A running task past its deadline is left
-- out until the deadline sweep ends it (a claim drops its entries meanwhile); once ended, its
-- entries must be gone like any other ended task's.
WITH t AS MATERIALIZED (
    SELECT t.id, t.status, t.plan_version,
           greatest(t.max_concurrent_steps
                    - (SELECT count(*) FROM steps r WHERE r.task_id = t.id AND r.status = 'running'), 0) AS room
    FROM tasks t
    WHERE t.deadline_at IS NULL OR t.deadline_at > now() OR t.status <> 'running'
), want AS MATERIALIZED (
    SELECT s.id AS step_id, t.id AS task_id, s.tool, s.run_after
    FROM t CROSS JOIN LATERAL (
        SELECT s.id, s.run_after, coalesce(s.tool_override, s.tool) AS tool
        FROM steps s WHERE s.task_id = t.id AND s.plan_version = t.plan_version AND s.status = 'ready'
        ORDER BY s.run_after, s.position, s.item_index LIMIT t.room) s
    WHERE t.status = 'running'
), have AS MATERIALIZED (
    SELECT q.step_id, q.task_id, q.tool, q.run_after FROM claim_queue q
    WHERE q.task_id IN (SELECT id FROM t)
)
SELECT w.task_id, w.step_id, 'missing' AS problem FROM want w
WHERE NOT EXISTS (SELECT 1 FROM have h WHERE h.step_id = w.step_id AND h.task_id = w.task_id
                  AND h.tool = w.tool AND h.run_after = w.run_after)
UNION ALL
SELECT h.task_id, h.step_id, 'extra' FROM have h
WHERE NOT EXISTS (SELECT 1 FROM want w WHERE w.step_id = h.step_id AND w.task_id = h.task_id
                  AND w.tool = h.tool AND w.run_after = h.run_after)
ORDER BY 1, 2
