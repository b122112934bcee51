-- name: step/complete
-- move: StepMove::Complete
WITH i AS (
    SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::bigint[], $4::jsonb[], $5::text[],
                         $6::jsonb[], $7::uuid[], $8::float8[], $9::text[])
         AS i(step_id, task_id, token, output, tool, parameters, worker_id, cost, call_key)
), done AS (
    UPDATE steps s
    SET status = 'succeeded', output = i.output, error = NULL, attempts = s.attempts + 1,
        lease_owner = NULL, lease_expires_at = NULL, finished_at = clock_timestamp(), updated_at = now()
    FROM i
    -- by primary key (the task and status checks are written so no index matches them)
    WHERE s.id = i.step_id AND s.lease_token = i.token
      AND (s.task_id = i.task_id AND s.status IN ('running')) IS NOT FALSE
    RETURNING s.id, s.task_id, s.step_key, s.plan_version, s.attempts, s.started_at, s.output,
              s.map_step_id
), recorded AS (
    INSERT INTO attempts (task_id, step_id, step_key, plan_version, attempt, tool, parameters,
                          status, output, worker_id, started_at, finished_at, cost,
                          idempotency_key)
    SELECT d.task_id, d.id, d.step_key, d.plan_version, d.attempts, i.tool, i.parameters,
           'succeeded', d.output, i.worker_id, coalesce(d.started_at, now()), clock_timestamp(),
           i.cost, i.call_key
    FROM done d JOIN i ON i.step_id = d.id
), charged AS (
    -- a tool's reported cost goes to its task (no cost reported: no task row is touched)
    UPDATE tasks t SET cost = t.cost + c.cost
    FROM (SELECT d.task_id, sum(i.cost) AS cost FROM done d JOIN i ON i.step_id = d.id
          WHERE i.cost > 0 GROUP BY d.task_id) c
    WHERE t.id = c.task_id
), healed AS (
    -- a success closes its tool's circuit and resets its count of outages in a row (and says
    -- when: `healed_at`); a tool with no circuit row, or a closed one with nothing counted, is
    -- not written. One
    -- that closes an open circuit (its probe's) releases the steps that waited one per
    -- pace (`Circuit::after_success`, pace `domain::circuit::DEFAULT_PACE_MS`)
    UPDATE tool_circuits c
    SET consecutive_failures = 0, open_until = NULL, probe_until = NULL, updated_at = now(),
        healed_at = now(),
        held_until = CASE WHEN c.open_until IS NOT NULL AND (c.held_until IS NULL OR c.held_until < now())
                          THEN now() ELSE c.held_until END,
        next_slot = CASE WHEN c.open_until IS NOT NULL AND (c.held_until IS NULL OR c.held_until < now())
                         THEN NULL ELSE c.next_slot END,
        last_release = CASE WHEN c.open_until IS NOT NULL AND (c.held_until IS NULL OR c.held_until < now())
                            THEN NULL ELSE c.last_release END,
        pace_ms = CASE WHEN c.open_until IS NOT NULL AND (c.held_until IS NULL OR c.held_until < now())
                       THEN 50 ELSE c.pace_ms END
    WHERE c.tool_id IN (SELECT DISTINCT i.tool FROM i)
      AND (c.consecutive_failures > 0 OR c.open_until IS NOT NULL)
)
SELECT id, task_id, step_key, plan_version, attempts, map_step_id FROM done
