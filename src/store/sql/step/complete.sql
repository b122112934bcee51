-- name: step/complete
-- move: StepMove::Complete
WITH i AS (
    SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::bigint[], $4::jsonb[], $5::text[],
                         $6::jsonb[], $7::uuid[], $8::float8[], $9::text[])
         WITH ORDINALITY AS i(step_id, task_id, token, output, tool, parameters, worker_id, cost,
                              call_key, ord)
), done AS (
    UPDATE steps s
    SET status = 'succeeded', output = i.output, error = NULL, attempts = s.attempts + 1,
        lease_owner = NULL, lease_expires_at = NULL, finished_at = clock_timestamp(), updated_at = now()
    FROM i
    -- by primary key (the task and status checks are written so no index matches them)
    WHERE s.id = i.step_id AND s.lease_token = i.token
      AND (s.task_id = i.task_id AND s.status IN ('running')) IS NOT FALSE
    RETURNING s.id, s.task_id, s.step_key, s.plan_version, s.attempts, s.started_at, s.output,
              s.map_step_id, s.started_seq
), numbered AS MATERIALIZED (
    -- the `step_completed` events' sequence numbers, the tasks' next ones in the batch's order
    -- (the tasks' rows are locked by step/lock_batch_tasks: event_seq is stable)
    SELECT d.id, t.event_seq + row_number() OVER (PARTITION BY d.task_id ORDER BY i.ord) AS seq
    FROM done d JOIN i ON i.step_id = d.id JOIN tasks t ON t.id = d.task_id
), recorded AS (
    -- the attempt is the record of its start (started_seq) and of its success (completed_seq):
    -- the `events` view reads both events from it
    INSERT INTO attempts (task_id, step_id, step_key, plan_version, attempt, tool, parameters,
                          status, output, worker_id, started_at, finished_at, cost,
                          idempotency_key, started_seq, completed_seq)
    SELECT d.task_id, d.id, d.step_key, d.plan_version, d.attempts, i.tool, i.parameters,
           'succeeded', d.output, i.worker_id, coalesce(d.started_at, now()), clock_timestamp(),
           i.cost, i.call_key, d.started_seq, n.seq
    FROM done d JOIN i ON i.step_id = d.id JOIN numbered n ON n.id = d.id
), charged AS (
    -- one write per task: the numbers taken, and a tool's reported cost
    UPDATE tasks t SET event_seq = t.event_seq + c.n,
                       cost = CASE WHEN c.cost > 0 THEN t.cost + c.cost ELSE t.cost END
    FROM (SELECT d.task_id, count(*) AS n, coalesce(sum(i.cost) FILTER (WHERE i.cost > 0), 0) AS cost
          FROM done d JOIN i ON i.step_id = d.id GROUP BY d.task_id) c
    WHERE t.id = c.task_id
), healed AS (
    -- a success closes its tool's circuit and resets its count of outages in a row; a
    -- tool with no circuit row, or a closed one with nothing counted, is not written
    UPDATE tool_circuits c
    SET consecutive_failures = 0, open_until = NULL, probe_until = NULL, updated_at = now()
    WHERE c.tool_id IN (SELECT DISTINCT i.tool FROM i)
      AND (c.consecutive_failures > 0 OR c.open_until IS NOT NULL)
)
SELECT d.id, d.task_id, d.plan_version, d.map_step_id, n.seq AS completed_seq
FROM done d JOIN numbered n ON n.id = d.id
