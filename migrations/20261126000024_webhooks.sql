-- Completion webhooks (waits issue): subscriptions and per-task webhooks; every event a
-- webhook asks for is written to the outbox (webhook_deliveries) by a statement-level trigger
-- in the transaction that appends it. With no subscription and no task webhook the trigger
-- reads two empty tables and writes nothing.
CREATE TABLE webhooks (
    id          uuid PRIMARY KEY,
    url         text NOT NULL,
    -- event kinds; empty: the terminal kinds and intervention_required
    events      text[] NOT NULL DEFAULT '{}',
    -- only tasks submitted from this template (null: every task)
    template    text,
    -- the Standard Webhooks signing secret (whsec_…)
    secret      text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE task_webhooks (
    task_id     uuid PRIMARY KEY REFERENCES tasks (id) ON DELETE CASCADE,
    url         text NOT NULL,
    events      text[] NOT NULL DEFAULT '{}'
);

CREATE TABLE webhook_deliveries (
    id              uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    -- null: the task's own webhook
    webhook_id      uuid REFERENCES webhooks (id) ON DELETE CASCADE,
    task_id         uuid NOT NULL,
    seq             bigint NOT NULL,
    kind            text NOT NULL,
    payload         jsonb NOT NULL,
    event_at        timestamptz NOT NULL,
    url             text NOT NULL,
    status          text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'dead')),
    attempts        integer NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    -- a worker delivering it holds it until then
    leased_until    timestamptz,
    -- every try: {"at", "status" (HTTP, or null), "error"}
    log             jsonb NOT NULL DEFAULT '[]'::jsonb,
    created_at      timestamptz NOT NULL DEFAULT now(),
    delivered_at    timestamptz
);
CREATE INDEX webhook_deliveries_due_idx ON webhook_deliveries (next_attempt_at) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_order_idx ON webhook_deliveries (task_id, url, seq) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_webhook_idx ON webhook_deliveries (webhook_id, created_at DESC);

CREATE FUNCTION trellis_webhook_outbox() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM webhooks) AND NOT EXISTS (SELECT 1 FROM task_webhooks) THEN
        RETURN NULL;
    END IF;
    INSERT INTO webhook_deliveries (webhook_id, task_id, seq, kind, payload, event_at, url)
    SELECT w.id, e.task_id, e.seq, e.kind, e.payload, e.at, w.url
    FROM new_events e
    JOIN webhooks w ON (CASE WHEN cardinality(w.events) = 0
                             THEN e.kind IN ('task_succeeded', 'task_failed', 'task_cancelled',
                                             'intervention_required')
                             ELSE e.kind = ANY(w.events) END)
    WHERE w.template IS NULL
       OR EXISTS (SELECT 1 FROM plans p WHERE p.task_id = e.task_id AND p.version = 1
                  AND p.origin = 'template:' || w.template)
    UNION ALL
    SELECT NULL, e.task_id, e.seq, e.kind, e.payload, e.at, t.url
    FROM new_events e
    JOIN task_webhooks t ON t.task_id = e.task_id
    WHERE CASE WHEN cardinality(t.events) = 0
               THEN e.kind IN ('task_succeeded', 'task_failed', 'task_cancelled',
                               'intervention_required')
               ELSE e.kind = ANY(t.events) END;
    RETURN NULL;
END $$;

CREATE TRIGGER events_webhook_outbox AFTER INSERT ON events
    REFERENCING NEW TABLE AS new_events
    FOR EACH STATEMENT EXECUTE FUNCTION trellis_webhook_outbox();

COMMENT ON TABLE webhook_deliveries IS 'The webhook outbox: one row per event per webhook, delivered at least once, in order per task, by the workers.';
