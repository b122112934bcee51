-- Tenants (fairness issue, part 3). An API key belongs to a tenant, and every row a tenant
-- creates carries it: tasks (children and scheduled ticks take their parent's and schedule's),
-- templates, tools, schedules, webhooks, secrets, MCP servers, waits and inbound events. The
-- API filters every read and action by the caller's tenant (an admin key reads across them);
-- a task's plan may only name its tenant's tools. Existing rows and keys are `default`'s, so a
-- deployment with one tenant is unchanged.
CREATE DOMAIN trellis_tenant AS text CHECK (VALUE ~ '^[A-Za-z0-9_.-]{1,64}$');

ALTER TABLE api_keys      ADD COLUMN tenant trellis_tenant NOT NULL DEFAULT 'default';
ALTER TABLE tasks         ADD COLUMN tenant trellis_tenant NOT NULL DEFAULT 'default';
ALTER TABLE templates     ADD COLUMN tenant trellis_tenant NOT NULL DEFAULT 'default';
ALTER TABLE tools         ADD COLUMN tenant trellis_tenant NOT NULL DEFAULT 'default';
ALTER TABLE schedules     ADD COLUMN tenant trellis_tenant NOT NULL DEFAULT 'default';
ALTER TABLE webhooks      ADD COLUMN tenant trellis_tenant NOT NULL DEFAULT 'default';
ALTER TABLE secrets       ADD COLUMN tenant trellis_tenant NOT NULL DEFAULT 'default';
ALTER TABLE mcp_servers   ADD COLUMN tenant trellis_tenant NOT NULL DEFAULT 'default';
ALTER TABLE waits         ADD COLUMN tenant trellis_tenant NOT NULL DEFAULT 'default';
ALTER TABLE inbound_events ADD COLUMN tenant trellis_tenant NOT NULL DEFAULT 'default';

-- An idempotency key is the tenant's own: another tenant's equal key names another task.
ALTER TABLE tasks DROP CONSTRAINT tasks_idempotency_key_key;
ALTER TABLE tasks ADD CONSTRAINT tasks_idempotency_key_key UNIQUE (tenant, idempotency_key);

-- Lists of a tenant other than `default`: their own index, so one deployment with a single
-- tenant writes nothing more per task (its lists use tasks_created_idx as before).
CREATE INDEX tasks_tenant_created_idx ON tasks (tenant, created_at DESC, id DESC)
    WHERE tenant <> 'default';

-- A webhook receives the events of its own tenant's tasks only.
CREATE OR REPLACE FUNCTION trellis_webhook_outbox() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM webhooks) AND NOT EXISTS (SELECT 1 FROM task_webhooks) THEN
        RETURN NULL;
    END IF;
    INSERT INTO webhook_deliveries (webhook_id, task_id, seq, kind, payload, event_at, url)
    SELECT w.id, e.task_id, e.seq, e.kind, e.payload, e.at, w.url
    FROM new_events e
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
    FROM new_events e
    JOIN task_webhooks t ON t.task_id = e.task_id
    WHERE CASE WHEN cardinality(t.events) = 0
               THEN e.kind IN ('task_succeeded', 'task_failed', 'task_cancelled',
                               'intervention_required')
               ELSE e.kind = ANY(t.events) END;
    RETURN NULL;
END $$;

COMMENT ON COLUMN tasks.tenant IS 'the tenant of the key that submitted it (a child''s: its parent''s; a tick''s: its schedule''s)';
