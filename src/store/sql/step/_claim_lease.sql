-- part: step/_claim_lease (of step/claim_plain and step/claim_checked)
-- move: StepMove::Claim
), claimed AS (
    -- by primary key: an id list, not a join the planner might drive from another index.
    -- started_seq: the `step_started` event's number, read from this row while the step runs
    -- and from its attempt after (one record per fact; the `events` view)
    UPDATE steps s
    SET status = 'running', lease_owner = $3, lease_token = s.lease_token + 1,
        lease_expires_at = now() + make_interval(secs => $4), started_at = clock_timestamp(), updated_at = now(),
        started_seq = (SELECT p.seq FROM picked p WHERE p.id = s.id)
    WHERE s.id = ANY(ARRAY(SELECT id FROM picked)) AND (s.status IN ('ready')) IS NOT FALSE
    RETURNING s.id, s.task_id, s.plan_version, s.step_key, coalesce(s.tool_override, s.tool) AS tool,
              s.parameters, s.param_overrides, s.actions, s.attempts + 1 AS attempt,
              s.lease_token, s.started_at, s.run_after, s.dependencies, s.feedback, s.map, s.item,
              s.item_index, s.map_step_id
), bump AS (
    -- every picked step's number is taken (a step no longer ready leaves a gap, never a repeat)
    UPDATE tasks t SET event_seq = t.event_seq + n.n
    FROM (SELECT task_id, count(*) AS n FROM picked GROUP BY task_id) n
    WHERE t.id = n.task_id
    RETURNING t.id, t.metadata || t.runtime_metadata AS metadata, t.context
