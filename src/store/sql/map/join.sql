-- name: map/join
-- move: StepMove::Join
-- Map steps ($1) whose items have all ended succeed: their output is the items' outputs in
-- item order (null for an item given up), and their attempt lists the given-up items' errors.
WITH j AS (
    SELECT ms.id,
           coalesce(jsonb_agg(CASE WHEN i.status = 'succeeded' THEN coalesce(i.output, 'null'::jsonb)
                                   ELSE 'null'::jsonb END ORDER BY i.item_index)
                    FILTER (WHERE i.id IS NOT NULL), '[]'::jsonb) AS output,
           coalesce(jsonb_agg(jsonb_build_object('item_index', i.item_index, 'step_id', i.step_key,
                                                 'error', i.error) ORDER BY i.item_index)
                    FILTER (WHERE i.status = 'skipped'), '[]'::jsonb) AS failed_items
    FROM steps ms
    LEFT JOIN steps i ON i.task_id = ms.task_id AND i.plan_version = ms.plan_version
                     AND i.map_step_id = ms.id AND i.status IN ('succeeded', 'skipped')
    WHERE ms.id = ANY($1)
    GROUP BY ms.id
), done AS (
    UPDATE steps s
    SET status = 'succeeded', output = j.output, error = NULL, attempts = s.attempts + 1,
        finished_at = clock_timestamp(), updated_at = now()
    FROM j
    WHERE s.id = j.id AND (s.status IN ('waiting')) IS NOT FALSE
    RETURNING s.id, s.task_id, s.step_key, s.plan_version, s.attempts, s.started_at, s.output,
              j.failed_items
), recorded AS (
    INSERT INTO attempts (task_id, step_id, step_key, plan_version, attempt, tool, parameters,
                          status, output, error, worker_id, started_at, finished_at)
    SELECT d.task_id, d.id, d.step_key, d.plan_version, d.attempts, '', '{}'::jsonb, 'succeeded',
           d.output,
           CASE WHEN jsonb_array_length(d.failed_items) > 0
                THEN jsonb_build_object('failed_items', d.failed_items) END,
           NULL, coalesce(d.started_at, now()), clock_timestamp()
    FROM done d
)
SELECT d.id, d.task_id, d.step_key, d.plan_version, d.attempts,
       jsonb_array_length(d.output) AS items, jsonb_array_length(d.failed_items) AS given_up
FROM done d
