-- Waits (waits issue): a step may wait — for a person, an outside event, a callback or a time —
-- in status 'waiting', which holds no worker slot and no lease (the claim never sees it: the
-- claim queue holds ready steps only).
ALTER TABLE steps DROP CONSTRAINT steps_status_check;
ALTER TABLE steps ADD CONSTRAINT steps_status_check
    CHECK (status IN ('blocked', 'ready', 'running', 'succeeded', 'failed', 'skipped', 'superseded', 'waiting'));

-- Every call of a tool waits for a person's approval first; an async tool answers later, at
-- the callback URL its call carries.
ALTER TABLE tools ADD COLUMN requires_approval boolean NOT NULL DEFAULT false;
ALTER TABLE tools ADD COLUMN mode text NOT NULL DEFAULT 'sync' CHECK (mode IN ('sync', 'async'));
ALTER TABLE tools ADD CONSTRAINT tools_async_is_http CHECK (mode = 'sync' OR kind = 'http');

INSERT INTO tools (id, name, description, kind, timeout_ms, input_schema) VALUES
  ('approval', 'approval', 'Waits for a person to approve or reject: {"prompt", "form" (JSON Schema), "role", "timeout_secs", "on_timeout": "reject" | "approve"}; output {"approved", "parameters", "comment", "decided_by"}.', 'builtin', 30000,
   '{"type":"object","properties":{"prompt":{"type":"string"},"form":{"type":"object"},"role":{"type":"string","enum":["reader","operator","admin"]},"timeout_secs":{"type":"number","exclusiveMinimum":0},"on_timeout":{"type":"string","enum":["reject","approve"]}}}'),
  ('wait_event', 'wait_event', 'Waits for POST /api/v1/events with this key (and a payload containing "match"): {"key", "match", "timeout_secs"}; output: the event''s payload.', 'builtin', 30000,
   '{"type":"object","properties":{"key":{"type":"string","minLength":1},"match":{"type":"object"},"timeout_secs":{"type":"number","exclusiveMinimum":0}},"required":["key"]}'),
  ('sleep_until', 'sleep_until', 'Waits without a worker until {"at": RFC 3339} or for {"secs": n}; output {"slept_until"}.', 'builtin', 30000,
   '{"type":"object","properties":{"at":{"type":"string","format":"date-time"},"secs":{"type":"number","minimum":0}}}');

-- One row per wait of one attempt of one step. Resolution is fenced on status = 'open'.
CREATE TABLE waits (
    id           uuid PRIMARY KEY,
    task_id      uuid NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    step_id      uuid NOT NULL REFERENCES steps (id) ON DELETE CASCADE,
    step_key     text NOT NULL,
    attempt      integer NOT NULL,
    kind         text NOT NULL CHECK (kind IN ('approval', 'event', 'callback', 'sleep')),
    status       text NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'resolved', 'expired', 'cancelled')),
    -- approval: what the approver sees, and who may decide
    prompt       text,
    form         jsonb,
    role         text CHECK (role IN ('reader', 'operator', 'admin')),
    on_timeout   text NOT NULL DEFAULT 'reject' CHECK (on_timeout IN ('reject', 'approve')),
    -- the tool a gated call will run (requires_approval), and its parameters as resolved
    gated_tool   text,
    parameters   jsonb,
    -- event: the key and the part of the payload that must match
    event_key    text,
    match        jsonb,
    -- callback: SHA-256 of the token in the callback URL (the token itself is never stored)
    token_hash   bytea UNIQUE,
    expires_at   timestamptz,
    created_at   timestamptz NOT NULL DEFAULT now(),
    resolved_at  timestamptz,
    -- {"outcome": "approved" | "rejected" | "completed" | "failed" | "event" | "timeout" | "slept", …}
    resolution   jsonb,
    -- the API key that decided (approvals)
    resolved_by  uuid,
    UNIQUE (step_id, attempt, kind),
    CHECK ((status = 'open') = (resolved_at IS NULL))
);
CREATE INDEX waits_open_expiry_idx ON waits (expires_at) WHERE status = 'open';
CREATE INDEX waits_open_event_idx ON waits (event_key) WHERE status = 'open' AND kind = 'event';
CREATE INDEX waits_task_idx ON waits (task_id);
CREATE INDEX waits_inbox_idx ON waits (status, created_at DESC);

-- Events posted to POST /api/v1/events, kept for a while so that a wait registered just after
-- its event still finds it (both sides take the key's advisory lock).
CREATE TABLE inbound_events (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    key         text NOT NULL,
    payload     jsonb NOT NULL DEFAULT '{}'::jsonb,
    received_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX inbound_events_key_idx ON inbound_events (key, received_at);

-- Delayed start: nothing of the task runs before run_at (its steps' run_after, its plan
-- decision's run_after); the deadline counts from it.
ALTER TABLE tasks ADD COLUMN run_at timestamptz;

COMMENT ON TABLE waits IS 'A step''s wait (approval, event, callback, sleep): one per attempt; resolved once (fenced on status = open).';
COMMENT ON TABLE inbound_events IS 'Events posted to POST /api/v1/events (key, payload), kept to resolve waits registered after them.';
