-- One record per fact: a step's start and its success are read from the rows that record them
-- already, not stored a second time as event rows (about 550 bytes of WAL a step).
--
-- * A claim gives the step its `step_started` number (steps.started_seq, in the claim's own HOT
--   update). While the step runs, the event is read from the step row; when it ends with an
--   attempt, from the attempt (attempts.started_seq, copied by every writer of an attempt).
-- * A success takes its `step_completed` number in the statement that records it
--   (attempts.completed_seq); the steps it promoted carry that number (steps.promoted_seq).
-- * A step that stops running without an attempt (released, parked, expanded into a map, a
--   superseded plan's) has its start stored as an event row by the steps trigger below, under
--   the number it took at its claim. No writer has to remember it.
--
-- The stored events move to event_records; `events` is now a view of every event, with the
-- same columns, so the API, SSE, `Last-Event-ID` and an analyst's SQL read what they read.
ALTER TABLE events RENAME TO event_records;
ALTER INDEX events_pkey RENAME TO event_records_pkey;
COMMENT ON TABLE event_records IS
    'Stored events: every kind but the step_started and step_completed that the view events reads from steps and attempts.';

ALTER TABLE steps ADD COLUMN started_seq bigint, ADD COLUMN promoted_seq bigint;
COMMENT ON COLUMN steps.started_seq IS
    'The number of the step_started event of its last claim (read from here while it runs).';
COMMENT ON COLUMN steps.promoted_seq IS
    'The number of the step_completed event whose promoted list names this step.';
ALTER TABLE attempts ADD COLUMN started_seq bigint, ADD COLUMN completed_seq bigint;
COMMENT ON COLUMN attempts.started_seq IS 'The number of its step_started event (null: stored in event_records).';
COMMENT ON COLUMN attempts.completed_seq IS 'The number of its step_completed event (null: none, or stored in event_records).';

CREATE VIEW events AS
SELECT e.task_id, e.seq, e.kind, e.payload, e.at FROM event_records e
UNION ALL
SELECT a.task_id, a.started_seq, 'step_started',
       jsonb_build_object('step_id', a.step_key, 'attempt', a.attempt, 'tool', a.tool,
                          'worker_id', a.worker_id),
       a.started_at
FROM attempts a WHERE a.started_seq IS NOT NULL
UNION ALL
SELECT a.task_id, a.completed_seq, 'step_completed',
       jsonb_build_object('step_id', a.step_key, 'attempt', a.attempt, 'tool', a.tool)
       || coalesce((SELECT jsonb_build_object('promoted', jsonb_agg(p.step_key ORDER BY p.position))
                    FROM steps p WHERE p.task_id = a.task_id AND p.promoted_seq = a.completed_seq
                    HAVING count(*) > 0), '{}'::jsonb),
       a.finished_at
FROM attempts a WHERE a.completed_seq IS NOT NULL
UNION ALL
SELECT s.task_id, s.started_seq, 'step_started',
       jsonb_build_object('step_id', s.step_key, 'attempt', s.attempts + 1,
                          'tool', coalesce(s.tool_override, s.tool), 'worker_id', s.lease_owner),
       s.started_at
FROM steps s WHERE s.status = 'running' AND s.started_seq IS NOT NULL;
COMMENT ON VIEW events IS
    'Every event of every task: the stored ones (event_records), each step''s start and success from its attempt, and a running step''s start from its row.';

-- The webhook outbox of a set of events (any source): one delivery per matching subscription.
CREATE FUNCTION trellis_webhook_enqueue(p_task uuid[], p_seq bigint[], p_kind text[],
                                        p_payload jsonb[], p_at timestamptz[])
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM webhooks) AND NOT EXISTS (SELECT 1 FROM task_webhooks) THEN
        RETURN;
    END IF;
    INSERT INTO webhook_deliveries (webhook_id, task_id, seq, kind, payload, event_at, url)
    SELECT w.id, e.task_id, e.seq, e.kind, e.payload, e.at, w.url
    FROM unnest(p_task, p_seq, p_kind, p_payload, p_at) AS e(task_id, seq, kind, payload, at)
    JOIN tasks tk ON tk.id = e.task_id
    JOIN webhooks w ON w.tenant = tk.tenant
                   AND (CASE WHEN cardinality(w.events) = 0
                             THEN e.kind IN ('task_succeeded', 'task_failed', 'task_cancelled',
                                             'intervention_required')
                             ELSE e.kind = ANY(w.events) END)
    WHERE w.template IS NULL
       OR EXISTS (SELECT 1 FROM plans p WHERE p.task_id = e.task_id AND p.version = 1
                  AND p.origin = 'template:' || w.template)
    UNION ALL
    SELECT NULL, e.task_id, e.seq, e.kind, e.payload, e.at, t.url
    FROM unnest(p_task, p_seq, p_kind, p_payload, p_at) AS e(task_id, seq, kind, payload, at)
    JOIN task_webhooks t ON t.task_id = e.task_id
    WHERE CASE WHEN cardinality(t.events) = 0
               THEN e.kind IN ('task_succeeded', 'task_failed', 'task_cancelled',
                               'intervention_required')
               ELSE e.kind = ANY(t.events) END;
END $$;

CREATE OR REPLACE FUNCTION trellis_webhook_outbox() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM webhooks) AND NOT EXISTS (SELECT 1 FROM task_webhooks) THEN
        RETURN NULL;
    END IF;
    PERFORM trellis_webhook_enqueue(array_agg(e.task_id), array_agg(e.seq), array_agg(e.kind),
                                    array_agg(e.payload), array_agg(e.at))
    FROM new_events e;
    RETURN NULL;
END $$;

-- A success's step_completed goes out the moment its attempt is recorded (its step_started
-- went out at the claim, below).
CREATE FUNCTION trellis_attempts_outbox() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM webhooks) AND NOT EXISTS (SELECT 1 FROM task_webhooks) THEN
        RETURN NULL;
    END IF;
    PERFORM trellis_webhook_enqueue(
        array_agg(a.task_id), array_agg(a.completed_seq), array_agg('step_completed'::text),
        array_agg(jsonb_build_object('step_id', a.step_key, 'attempt', a.attempt, 'tool', a.tool)),
        array_agg(a.finished_at))
    FROM new_attempts a WHERE a.completed_seq IS NOT NULL;
    RETURN NULL;
END $$;

CREATE TRIGGER attempts_webhook_outbox AFTER INSERT ON attempts
    REFERENCING NEW TABLE AS new_attempts
    FOR EACH STATEMENT EXECUTE FUNCTION trellis_attempts_outbox();

-- The steps trigger keeps running_steps as before, and now also: stores the start of a step
-- that stopped running without an attempt (its attempts count unchanged), and, when webhooks
-- exist, sends each claim's step_started and adds a promotion's list to its completion's
-- pending deliveries (the completion and the promotion share one transaction).
CREATE OR REPLACE FUNCTION trellis_running_steps_updated() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    started integer;
BEGIN
    WITH gone AS (
        DELETE FROM running_steps r
        USING trellis_old o JOIN trellis_new n ON n.id = o.id
        WHERE r.step_id = o.id AND o.status = 'running' AND n.status <> 'running'
        RETURNING o.task_id, o.started_seq, o.step_key, o.attempts AS old_attempts,
                  n.attempts AS new_attempts, coalesce(o.tool_override, o.tool) AS tool,
                  o.lease_owner, o.started_at
    )
    INSERT INTO event_records (task_id, seq, kind, payload, at)
    SELECT g.task_id, g.started_seq, 'step_started',
           jsonb_build_object('step_id', g.step_key, 'attempt', g.old_attempts + 1,
                              'tool', g.tool, 'worker_id', g.lease_owner),
           coalesce(g.started_at, now())
    FROM gone g
    WHERE g.started_seq IS NOT NULL AND g.new_attempts = g.old_attempts;
    INSERT INTO running_steps (step_id, task_id)
    SELECT n.id, n.task_id
    FROM trellis_new n JOIN trellis_old o ON o.id = n.id
    WHERE n.status = 'running' AND o.status <> 'running'
    ON CONFLICT (step_id) DO NOTHING;
    GET DIAGNOSTICS started = ROW_COUNT;
    IF NOT EXISTS (SELECT 1 FROM webhooks) AND NOT EXISTS (SELECT 1 FROM task_webhooks) THEN
        RETURN NULL;
    END IF;
    IF started > 0 THEN
        PERFORM trellis_webhook_enqueue(
            array_agg(n.task_id), array_agg(n.started_seq), array_agg('step_started'::text),
            array_agg(jsonb_build_object('step_id', n.step_key, 'attempt', n.attempts + 1,
                                         'tool', coalesce(n.tool_override, n.tool),
                                         'worker_id', n.lease_owner)),
            array_agg(n.started_at))
        FROM trellis_new n JOIN trellis_old o ON o.id = n.id
        WHERE n.status = 'running' AND o.status <> 'running' AND n.started_seq IS NOT NULL;
    END IF;
    UPDATE webhook_deliveries d SET payload = d.payload || jsonb_build_object('promoted', p.keys)
    FROM (SELECT n.task_id, n.promoted_seq, jsonb_agg(n.step_key ORDER BY n.position) AS keys
          FROM trellis_new n JOIN trellis_old o ON o.id = n.id
          WHERE n.promoted_seq IS NOT NULL AND o.promoted_seq IS DISTINCT FROM n.promoted_seq
          GROUP BY n.task_id, n.promoted_seq) p
    WHERE d.task_id = p.task_id AND d.seq = p.promoted_seq AND d.kind = 'step_completed'
      AND d.status = 'pending';
    RETURN NULL;
END $$;
