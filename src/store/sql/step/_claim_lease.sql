-- part: step/_claim_lease (of step/claim_plain and step/claim_checked)
-- move: StepMove::Claim
), claimed AS (
    -- by primary key: an id list, not a join the planner might drive from another index
    UPDATE steps s
    SET status = 'running', lease_owner = $3, lease_token = s.lease_token + 1,
        lease_expires_at = now() + make_interval(secs => $4), started_at = clock_timestamp(), updated_at = now()
    WHERE s.id = ANY(ARRAY(SELECT id FROM picked)) AND (s.status IN ('ready')) IS NOT FALSE
    RETURNING s.id, s.task_id, s.plan_version, s.step_key, coalesce(s.tool_override, s.tool) AS tool,
              s.parameters, s.param_overrides, s.actions, s.attempts + 1 AS attempt,
              s.lease_token, s.started_at, s.run_after, s.dependencies, s.feedback, s.map, s.item,
              s.item_index, s.map_step_id
), ev AS (
    SELECT c.task_id, p.ord,
           row_number() OVER (PARTITION BY c.task_id ORDER BY p.ord) AS rn,
           jsonb_build_object('step_id', c.step_key, 'attempt', c.attempt, 'tool', c.tool,
                              'worker_id', $3::uuid) AS payload
    FROM claimed c JOIN picked p ON p.id = c.id
), bump AS (
    UPDATE tasks t SET event_seq = t.event_seq + n.n
    FROM (SELECT task_id, count(*) AS n FROM ev GROUP BY task_id) n
    WHERE t.id = n.task_id
    RETURNING t.id, t.event_seq AS last_seq, n.n, t.metadata || t.runtime_metadata AS metadata,
              t.context
), logged AS (
    INSERT INTO events (task_id, seq, kind, payload)
    SELECT ev.task_id, b.last_seq - b.n + ev.rn, $5, ev.payload
    FROM ev JOIN bump b ON b.id = ev.task_id
