-- name: task/submit
WITH missing AS (
    SELECT coalesce(array_agg(x ORDER BY x), '{}') AS ids
    FROM unnest($1::text[]) AS x
    WHERE NOT EXISTS (SELECT 1 FROM tools
                      WHERE id = x AND (tenant = $60::text OR kind = 'builtin'))
), t_in AS (
    SELECT t.*,
           -- a delayed start: nothing of the task runs before it (database clock)
           coalesce(t.run_at, now() + make_interval(secs => t.delay_secs)) AS start_at
    FROM unnest($8::int[], $9::uuid[], $10::text[], $11::jsonb[], $12::jsonb[],
                         $13::int[], $14::text[], $15::text[], $16::int[], $17::bigint[],
                         $18::int[], $19::int[], $20::int[], $21::int[], $22::int[], $23::int[],
                         $24::boolean[], $25::boolean[], $26::float8[], $27::int[], $28::int[],
                         $29::bigint[], $30::boolean[], $31::text[], $32::int[], $33::jsonb[],
                         $34::uuid[], $35::jsonb[], $36::jsonb[], $37::text[], $51::timestamptz[],
                         $52::float8[], $53::text[], $54::text[], $56::uuid[], $57::uuid[],
                         $58::text[], $61::float8[])
    AS t(ord, id, description, metadata, context, priority, idempotency_key, status,
         plan_version, event_seq, max_step_retries, max_single_step_repairs, max_task_replans,
         max_consecutive_failures, max_reflection_rounds, max_concurrent_steps, step_reflection,
         auto_reflection, success_threshold, max_llm_calls, task_timeout_secs, max_llm_tokens,
         has_plan, reasoning, estimated_duration, plan_steps, decision_id, submitted, generated,
         origin, run_at, delay_secs, webhook_url, webhook_events, parent_task_id, parent_step_id,
         concurrency_key, max_cost)
), head AS (
    -- the queue's head: the next claim's turn (first in the unlimited lane)
    SELECT coalesce(
        (SELECT q.pass FROM claim_queue q WHERE q.lane = '' AND NOT q.delayed
         ORDER BY q.lane, q.priority DESC, q.pass, q.task_created_at, q.task_id, q.position
         LIMIT 1),
        0) AS pass
), keys AS MATERIALIZED (
    -- each key of the batch: the pattern that governs it (an exact key, then the longest
    -- pattern; tasks without a key have none), its weight (that pattern's, else $59) and where
    -- it left off (or the head, if that is later: an idle key banks no credit). Materialized:
    -- inlined into `fair`, its lookups ran once per task of the batch, not once per key (70 ms
    -- of a 1,000-task batch's 165 ms on a stock server)
    SELECT k.k, k.pattern,
           greatest(1, round(1000000 / coalesce(
               (SELECT l.weight FROM key_limits l WHERE l.pattern = k.pattern), $59::float8)))::bigint
               AS stride,
           greatest((SELECT x.fair_pass FROM tasks x WHERE coalesce(x.concurrency_key, '') = k.k
                     ORDER BY x.fair_pass DESC LIMIT 1),
                    (SELECT pass FROM head), 0) AS base
    FROM (SELECT k.k,
                 CASE WHEN k.k <> '' THEN
                     (SELECT l.pattern FROM key_limits l WHERE k.k LIKE l.like_pattern
                      ORDER BY position('*' IN l.pattern) = 0 DESC, length(l.pattern) DESC, l.pattern
                      LIMIT 1) END AS pattern
          FROM (SELECT DISTINCT coalesce(concurrency_key, '') AS k FROM t_in) k) k
), fair AS (
    -- a key's tasks of the batch take its next turns, in the batch's order
    SELECT t.id, k.pattern,
           k.base + k.stride * row_number() OVER (PARTITION BY k.k ORDER BY t.ord) AS pass
    FROM t_in t JOIN keys k ON k.k = coalesce(t.concurrency_key, '')
), ins AS (
    INSERT INTO tasks (id, description, metadata, context, priority, idempotency_key, status,
                       plan_version, event_seq, max_step_retries, max_single_step_repairs,
                       max_task_replans, max_consecutive_failures, max_reflection_rounds,
                       max_concurrent_steps, step_reflection, auto_reflection, success_threshold,
                       max_llm_calls, deadline_at, max_llm_tokens, run_at, parent_task_id,
                       parent_step_id, concurrency_key, fair_pass, key_pattern, tenant, max_cost)
    SELECT id, description, metadata, context, priority, idempotency_key, status, plan_version,
           event_seq, max_step_retries, max_single_step_repairs, max_task_replans,
           max_consecutive_failures, max_reflection_rounds, max_concurrent_steps, step_reflection,
           auto_reflection, success_threshold, max_llm_calls,
           CASE WHEN task_timeout_secs > 0
                THEN coalesce(start_at, now()) + make_interval(secs => task_timeout_secs) END,
           max_llm_tokens, start_at, parent_task_id, parent_step_id, concurrency_key, f.pass,
           f.pattern, $60::text, max_cost
    FROM t_in JOIN fair f USING (id)
    WHERE cardinality((SELECT ids FROM missing)) = 0
    ORDER BY ord
    ON CONFLICT (tenant, idempotency_key) DO NOTHING
    RETURNING id, run_at
), new AS (
    SELECT t_in.*, f.pass FROM t_in JOIN ins USING (id) JOIN fair f USING (id)
), plans_in AS (
    INSERT INTO plans (task_id, version, origin, reasoning, estimated_duration, steps)
    SELECT id, 1, origin, reasoning, estimated_duration, plan_steps FROM new WHERE has_plan
), steps_in AS (
    INSERT INTO steps (id, task_id, plan_version, step_key, position, name, tool, parameters,
                       dependencies, expected_output, optional, actions, status, priority,
                       run_after, map)
    SELECT r.id, r.task_id, 1, r.step_key, r.position, r.name, r.tool, r.parameters,
           -- unnest cannot take arrays of arrays of different lengths: a step's dependencies
           -- travel as one text, joined by the unit separator (no step key contains it)
           string_to_array(r.dependencies, chr(31)), r.expected_output,
           r.optional, r.actions, r.status, r.priority, coalesce(ins.run_at, now()),
           -- a map step's `map` (JSON null for the others)
           CASE WHEN jsonb_typeof(r.map) = 'object' THEN r.map END
    FROM unnest($38::uuid[], $39::uuid[], $40::text[], $41::int[], $42::text[], $43::text[],
                $44::jsonb[], $45::text[], $46::text[], $47::boolean[], $48::jsonb[],
                $49::text[], $50::int[], $55::jsonb[])
         AS r(id, task_id, step_key, position, name, tool, parameters, dependencies,
              expected_output, optional, actions, status, priority, map)
    JOIN ins ON ins.id = r.task_id
    RETURNING id, task_id, position, tool, status, priority, run_after
), queue_in AS (
    -- each new task's first ready steps, as many as it may run at once, are claimable
    -- (store::claim_queue), in the ring's current slot (read once for the statement)
    INSERT INTO claim_queue (step_id, task_id, priority, pass, task_created_at, position, tool,
                             lane, run_after, delayed, slot)
    SELECT r.id, r.task_id, r.priority, new.pass, now(), r.position, r.tool,
           CASE WHEN EXISTS (SELECT 1 FROM tool_buckets b WHERE b.tool_id = r.tool) THEN r.tool ELSE '' END,
           r.run_after, r.run_after > now(), (SELECT slot FROM claim_ring)
    FROM (SELECT r.*, row_number() OVER (PARTITION BY r.task_id ORDER BY r.position) AS nth
          FROM steps_in r WHERE r.status = 'ready') r
    JOIN new ON new.id = r.task_id
    WHERE r.nth <= new.max_concurrent_steps
), hooks_in AS (
    -- a task's own webhook, before its first event (the outbox trigger reads it)
    INSERT INTO task_webhooks (task_id, url, events)
    SELECT id, webhook_url, coalesce(string_to_array(nullif(webhook_events, ''), chr(31)), '{}')
    FROM new WHERE webhook_url IS NOT NULL
), decisions_in AS (
    INSERT INTO decisions (id, task_id, kind, task_version, input, status, run_after)
    SELECT decision_id, id, 'plan', 0, $2, 'pending', coalesce(start_at, now())
    FROM new WHERE NOT has_plan
), events_in AS (
    INSERT INTO events (task_id, seq, kind, payload)
    SELECT id, 1, $3, submitted FROM new
    UNION ALL
    SELECT id, 2, $4, generated FROM new WHERE has_plan
), woken AS (
    SELECT pg_notify($5, CASE WHEN bool_and(has_plan) THEN '' ELSE $6 END)
    FROM new WHERE $7 HAVING count(*) > 0
)
SELECT (SELECT ids FROM missing) AS missing, t_in.ord,
       ins.id AS task_id, t_in.status, t_in.idempotency_key,
       (SELECT count(*) FROM woken) AS woken
FROM t_in
LEFT JOIN ins USING (id)
ORDER BY t_in.ord
