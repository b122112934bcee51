-- name: plan/insert_steps
INSERT INTO steps (id, task_id, plan_version, step_key, position, name, tool, parameters,
                   dependencies, expected_output, optional, actions, status, priority,
                   attempts, output, finished_at, map)
SELECT r.id, $1, $2, r.step_key, r.position, r.name, r.tool, r.parameters,
       r.dependencies, r.expected_output, r.optional, r.actions, r.status, $3,
       r.attempts, r.output, CASE WHEN r.finished THEN now() END,
       CASE WHEN jsonb_typeof(r.map) = 'object' THEN r.map END
FROM jsonb_to_recordset($4) AS r(id uuid, step_key text, position int, name text, tool text,
     parameters jsonb, dependencies text[], expected_output text, optional boolean,
     actions jsonb, status text, attempts int, output jsonb, finished boolean, map jsonb)
