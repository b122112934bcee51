-- name: step/claim_checked
-- move: StepMove::Claim (in step/_claim_lease)
-- followed by step/_claim_lease, step/_claim_spend and step/_claim_result
WITH cap AS MATERIALIZED (
    -- steps each limited tool may start now: 0 for a tool another claim holds ($6 lists the
    -- ones this transaction locked), else the least of its free slots and its whole tokens
    SELECT b.tool_id,
           CASE WHEN NOT (b.tool_id = ANY($6::text[])) THEN 0 ELSE trellis_tool_room(t, b) END AS cap
    FROM tool_buckets b JOIN tools t ON t.id = b.tool_id
), cand AS MATERIALIZED (
    SELECT q.step_id, q.task_id, q.priority, q.pass, q.task_created_at, q.position, q.lane
    FROM claim_queue q
    WHERE q.task_id = ANY($8::uuid[]) AND q.step_id = ANY($1::uuid[])
), state AS MATERIALIZED (
    -- the locked tasks (their rows are stable): may they get steps, do they run some
    SELECT t.id,
           t.status = 'running' AND (t.deadline_at IS NULL OR t.deadline_at > now()) AS ok,
           EXISTS (SELECT 1 FROM steps r WHERE r.task_id = t.id AND r.status = 'running') AS active,
           t.priority, t.fair_pass, t.created_at, t.concurrency_key, t.key_pattern, t.tenant
    FROM tasks t WHERE t.id = ANY($8::uuid[])
), tenant_room AS MATERIALIZED (
    -- per capped tenant ($11, $12: the `[tenants]` defaults, 0 none; a `tenants` row wins):
    -- the steps it may start and the tasks without running steps it may start, counted with
    -- this snapshot under the tenant's lock ($10 lists the tenants this transaction locked);
    -- 0 for a tenant another claim holds. Tenants without a cap: no row
    -- (a null: that cap is not set)
    SELECT x.tenant,
           CASE WHEN x.steps IS NULL THEN NULL WHEN NOT (x.tenant = ANY($10::text[])) THEN 0
                ELSE greatest(x.steps - r.steps, 0) END AS steps,
           CASE WHEN x.tasks IS NULL THEN NULL WHEN NOT (x.tenant = ANY($10::text[])) THEN 0
                ELSE greatest(x.tasks - r.tasks, 0) END AS tasks
    FROM (SELECT d.tenant,
                 coalesce(n.max_running_steps, nullif($12::int, 0)) AS steps,
                 coalesce(n.max_running_tasks, nullif($11::int, 0)) AS tasks
          FROM (SELECT DISTINCT s.tenant FROM state s) d
          LEFT JOIN tenants n ON n.tenant = d.tenant
          -- no cap, no count: with none configured this reads only the tenants table
          WHERE coalesce(n.max_running_steps, nullif($12::int, 0)) IS NOT NULL
             OR coalesce(n.max_running_tasks, nullif($11::int, 0)) IS NOT NULL) x
    CROSS JOIN LATERAL (
        SELECT count(*) AS steps, count(DISTINCT rs.task_id) AS tasks
        FROM running_steps rs JOIN tasks y ON y.id = rs.task_id
        WHERE y.tenant = x.tenant) r
), admitted AS MATERIALIZED (
    -- within the fleet's task cap ($7) and its tenant's: tasks already running steps need no
    -- admission
    SELECT s.id FROM (
        SELECT s.id, s.active,
               row_number() OVER (PARTITION BY s.active ORDER BY s.priority DESC, s.fair_pass, s.created_at, s.id) AS nth,
               row_number() OVER (PARTITION BY s.active, s.tenant ORDER BY s.priority DESC, s.fair_pass, s.created_at, s.id) AS tnth,
               (SELECT tr.tasks FROM tenant_room tr WHERE tr.tenant = s.tenant) AS troom
        FROM state s WHERE s.ok) s
    WHERE s.active OR (($7 < 0 OR s.nth <= $7) AND s.tnth <= coalesce(s.troom, s.tnth))
), offered AS MATERIALIZED (
    SELECT c.*, row_number() OVER (PARTITION BY c.lane
                                   ORDER BY c.priority DESC, c.pass, c.task_created_at, c.task_id, c.position) AS nth
    FROM cand c WHERE c.task_id IN (SELECT id FROM admitted)
), key_room AS MATERIALIZED (
    -- steps each key under a max_running may start now: its free slots, counted with this
    -- snapshot under its pattern's lock ($9 lists the patterns this transaction locked); 0 for
    -- a key whose pattern another claim holds; the least, when a key's tasks name two patterns
    -- (one was added after some of them were submitted). Keys whose pattern sets no
    -- max_running: no row
    SELECT k.key, min(k.room) AS room FROM (
        SELECT k.concurrency_key AS key,
               CASE WHEN NOT (k.key_pattern = ANY($9::text[])) THEN 0
                    ELSE greatest(l.max_running - (
                        SELECT count(*) FROM running_steps r JOIN tasks x ON x.id = r.task_id
                        WHERE x.concurrency_key = k.concurrency_key), 0) END AS room
        FROM (SELECT DISTINCT s.concurrency_key, s.key_pattern FROM state s
              WHERE s.key_pattern IS NOT NULL) k
        JOIN key_limits l ON l.pattern = k.key_pattern
        WHERE l.max_running IS NOT NULL
        UNION ALL
        -- `[fairness] default_max_running` ($13; 0: none) for a key no pattern caps, counted
        -- under the key's own lock ($14 lists the keys this transaction locked)
        SELECT d.concurrency_key,
               CASE WHEN NOT (d.concurrency_key = ANY($14::text[])) THEN 0
                    ELSE greatest($13::int - (
                        SELECT count(*) FROM running_steps r JOIN tasks x ON x.id = r.task_id
                        WHERE x.concurrency_key = d.concurrency_key), 0) END
        FROM (SELECT DISTINCT s.concurrency_key FROM state s
              WHERE $13::int > 0 AND s.concurrency_key IS NOT NULL
                AND NOT EXISTS (SELECT 1 FROM key_limits l
                                WHERE l.pattern = s.key_pattern
                                  AND l.max_running IS NOT NULL)) d) k
    GROUP BY k.key
), lane_ok AS MATERIALIZED (
    SELECT o.*, s.concurrency_key AS ckey, s.tenant FROM offered o JOIN state s ON s.id = o.task_id
    WHERE o.lane = '' OR o.nth <= coalesce((SELECT cap FROM cap WHERE cap.tool_id = o.lane), 0)
), chosen AS MATERIALIZED (
    -- within its lane's room, and within its key's (an entry left by its key keeps its place)
    SELECT x.step_id, x.task_id, x.priority, x.pass, x.task_created_at, x.position, x.lane, x.nth
    FROM (SELECT l.*, row_number() OVER (PARTITION BY l.ckey
                                         ORDER BY l.priority DESC, l.pass, l.task_created_at,
                                                  l.task_id, l.position) AS knth,
                      row_number() OVER (PARTITION BY l.tenant
                                         ORDER BY l.priority DESC, l.pass, l.task_created_at,
                                                  l.task_id, l.position) AS tnth
          FROM lane_ok l) x
    WHERE x.knth <= coalesce((SELECT kr.room FROM key_room kr WHERE kr.key = x.ckey), x.knth)
      AND x.tnth <= coalesce((SELECT tr.steps FROM tenant_room tr WHERE tr.tenant = x.tenant), x.tnth)
    ORDER BY x.priority DESC, x.pass, x.task_created_at, x.task_id, x.position
    LIMIT $2
), dequeued AS (
    -- what is claimed leaves the queue; so do the entries of tasks no longer running or
    -- past their deadline
    DELETE FROM claim_queue q
    WHERE q.task_id = ANY($8::uuid[])
      AND (q.step_id IN (SELECT step_id FROM chosen)
           OR (q.step_id = ANY($1::uuid[])
               AND q.task_id IN (SELECT id FROM state WHERE NOT ok)))
), picked AS MATERIALIZED (
    SELECT step_id AS id,
           row_number() OVER (ORDER BY priority DESC, pass, task_created_at, task_id, position) AS ord
    FROM chosen
