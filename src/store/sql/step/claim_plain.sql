-- name: step/claim_plain
-- move: StepMove::Claim (in step/_claim_lease)
-- followed by step/_claim_lease and step/_claim_result
WITH me AS MATERIALIZED (
    -- task affinity: among the n live workers this one is the rank-th (by id); it takes the
    -- tasks that hash to its rank first, so that two workers' cycles rarely lock the same task
    -- rows (a worker that is not registered, or alone, has no share and takes the head)
    SELECT count(*) FILTER (WHERE w.id < $3) AS rank, count(*) AS n
    FROM workers w
    WHERE w.stopped_at IS NULL AND w.last_heartbeat > now() - make_interval(secs => w.lease_secs)
), due AS MATERIALIZED (
    SELECT q.step_id, q.task_id, q.priority, q.pass, q.task_created_at, q.position
    FROM claim_queue q
    WHERE q.delayed AND q.run_after <= now() AND q.lane = ''
    ORDER BY q.run_after
    LIMIT $1
    FOR UPDATE SKIP LOCKED
), win AS MATERIALIZED (
    -- the head of the queue, eight claims (at least 512 entries) deep and not locked: this
    -- worker's share of it is taken first (so a claim reads a bounded window whatever the
    -- depth, and priority and age still lead: an entry beyond the window waits for its turn
    -- at the head)
    SELECT q.step_id, q.task_id, q.priority FROM claim_queue q
    WHERE q.lane = '' AND NOT q.delayed AND (SELECT n FROM me) > 1
    ORDER BY q.lane, q.priority DESC, q.pass, q.task_created_at, q.task_id, q.position
    LIMIT greatest($1 * 8, 512)
), own AS MATERIALIZED (
    SELECT q.step_id, q.task_id, q.priority, q.pass, q.task_created_at, q.position
    FROM claim_queue q
    WHERE q.task_id = ANY(ARRAY(
              SELECT DISTINCT w.task_id FROM win w
              WHERE abs(hashtext(w.task_id::text)) % greatest((SELECT n FROM me), 1)
                    = (SELECT rank FROM me)))
      AND q.step_id = ANY(ARRAY(SELECT step_id FROM win))
      -- only the window's top priority: a more urgent entry of another worker's share is
      -- taken from the head by whoever claims first, never left behind this worker's share
      AND q.priority = (SELECT max(w.priority) FROM win w)
      AND q.lane = '' AND NOT q.delayed
    ORDER BY q.priority DESC, q.pass, q.task_created_at, q.task_id, q.position
    LIMIT $1
    FOR UPDATE SKIP LOCKED
), head AS MATERIALIZED (
    -- the rest from the head, whoever's share it is
    SELECT q.step_id, q.task_id, q.priority, q.pass, q.task_created_at, q.position
    FROM claim_queue q
    WHERE q.lane = '' AND NOT q.delayed
      AND NOT (q.step_id = ANY(ARRAY(SELECT step_id FROM own)))
    ORDER BY q.lane, q.priority DESC, q.pass, q.task_created_at, q.task_id, q.position
    LIMIT greatest($1 - (SELECT count(*) FROM own), 0)
    FOR UPDATE SKIP LOCKED
), cand AS MATERIALIZED (
    SELECT * FROM own UNION ALL SELECT * FROM head UNION ALL SELECT * FROM due
    ORDER BY priority DESC, pass, task_created_at, task_id, position
    LIMIT $1
), locked AS MATERIALIZED (
    SELECT t.id, t.status = 'running' AND (t.deadline_at IS NULL OR t.deadline_at > now()) AS ok
    FROM tasks t,
         (SELECT set_config('synchronous_commit',
                 CASE WHEN $2 THEN 'off' ELSE current_setting('synchronous_commit') END, true)) AS commit_mode
    -- by primary key (an id list, never a join the planner could turn into a scan)
    WHERE t.id = ANY(ARRAY(SELECT DISTINCT task_id FROM cand))
    ORDER BY t.id
    FOR NO KEY UPDATE OF t SKIP LOCKED
), taken AS MATERIALIZED (
    -- every entry of a locked task leaves the queue: claimed when the task runs with time
    -- left; dropped when it no longer runs or its deadline passed (the sweep fails it), so
    -- that no later claim walks over it again
    SELECT c.*, l.ok FROM cand c JOIN locked l ON l.id = c.task_id
), dequeued AS (
    DELETE FROM claim_queue q
    WHERE q.task_id = ANY(ARRAY(SELECT DISTINCT task_id FROM taken))
      AND q.step_id = ANY(ARRAY(SELECT step_id FROM taken))
), picked AS MATERIALIZED (
    SELECT step_id AS id,
           row_number() OVER (ORDER BY priority DESC, pass, task_created_at, task_id, position) AS ord
    FROM taken WHERE ok
