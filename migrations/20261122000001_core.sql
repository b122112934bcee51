-- Trellis durable core: tasks, immutable plan versions, steps, append-only attempts and events,
-- the tool registry and the worker registry.
-- Every status column has a CHECK constraint that matches the Rust enums in src/model.rs;
-- docs/state-machine.md draws the same transitions.

CREATE TABLE tools (
    id            text PRIMARY KEY CHECK (id ~ '^[A-Za-z0-9_.:-]{1,128}$'),
    name          text NOT NULL,
    description   text NOT NULL DEFAULT '',
    kind          text NOT NULL CHECK (kind IN ('builtin', 'http')),
    endpoint      text,
    timeout_ms    integer NOT NULL DEFAULT 30000 CHECK (timeout_ms > 0),
    input_schema  jsonb NOT NULL DEFAULT '{}'::jsonb,
    output_params text[] NOT NULL DEFAULT '{}',
    alternatives  text[] NOT NULL DEFAULT '{}',
    tags          text[] NOT NULL DEFAULT '{}',
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    CHECK (kind <> 'http' OR endpoint IS NOT NULL)
);

INSERT INTO tools (id, name, description, kind, timeout_ms, input_schema) VALUES
  ('echo',  'echo',  'Returns its parameters as output.', 'builtin', 30000, '{"type":"object"}'),
  ('sleep', 'sleep', 'Sleeps {"ms": n} milliseconds; output {"slept_ms": n}.', 'builtin', 3600000,
   '{"type":"object","properties":{"ms":{"type":"integer","minimum":0}},"required":["ms"]}'),
  ('fail',  'fail',  'Always fails with the error its parameters describe: message, category, retryable, hints.', 'builtin', 30000,
   '{"type":"object","properties":{"message":{"type":"string"},"category":{"type":"string"},"retryable":{"type":"boolean"},"hints":{"type":"object"}}}'),
  ('flaky', 'flaky', 'The first fail_times attempts of a step fail with a retryable tool_error, then it echoes its parameters.', 'builtin', 30000,
   '{"type":"object","properties":{"fail_times":{"type":"integer","minimum":0}}}'),
  ('http_request', 'http_request', 'Performs an HTTP request {"url", "method", "headers", "body"}; output {"status", "body"}.', 'builtin', 30000,
   '{"type":"object","properties":{"url":{"type":"string"},"method":{"type":"string"},"headers":{"type":"object"},"body":{}},"required":["url"]}');

CREATE TABLE tasks (
    id                        uuid PRIMARY KEY,
    description               text NOT NULL CHECK (length(btrim(description)) > 0),
    metadata                  jsonb NOT NULL DEFAULT '{}'::jsonb CHECK (jsonb_typeof(metadata) = 'object'),
    context                   jsonb NOT NULL DEFAULT '{}'::jsonb,
    -- values copied from tools' output params after successful steps; ${metadata.key} reads
    -- runtime_metadata first, then metadata
    runtime_metadata          jsonb NOT NULL DEFAULT '{}'::jsonb CHECK (jsonb_typeof(runtime_metadata) = 'object'),
    priority                  integer NOT NULL DEFAULT 0,
    idempotency_key           text UNIQUE,
    status                    text NOT NULL CHECK (status IN ('pending', 'planning', 'running', 'reflecting',
                                  'replanning', 'evaluating', 'succeeded', 'failed', 'needs_intervention', 'cancelled')),
    round                     integer NOT NULL DEFAULT 1 CHECK (round >= 1),
    plan_version              integer NOT NULL DEFAULT 0 CHECK (plan_version >= 0),
    -- recovery counters (SPEC §4)
    task_replan_count         integer NOT NULL DEFAULT 0 CHECK (task_replan_count >= 0),
    single_step_repair_count  integer NOT NULL DEFAULT 0 CHECK (single_step_repair_count >= 0),
    consecutive_failures      integer NOT NULL DEFAULT 0 CHECK (consecutive_failures >= 0),
    -- limits in force when the task was enqueued (config, overridden per task at submit time)
    max_step_retries          integer NOT NULL CHECK (max_step_retries >= 0),
    max_single_step_repairs   integer NOT NULL CHECK (max_single_step_repairs >= 0),
    max_task_replans          integer NOT NULL CHECK (max_task_replans >= 0),
    max_consecutive_failures  integer NOT NULL CHECK (max_consecutive_failures >= 0),
    max_reflection_rounds     integer NOT NULL CHECK (max_reflection_rounds >= 1),
    -- scheduling: how many of this task's steps may run at once (1 = sequential in plan order)
    max_concurrent_steps      integer NOT NULL CHECK (max_concurrent_steps >= 1),
    -- bumped by every transition of the task row; decisions (next issue) fence on it
    state_version             bigint NOT NULL DEFAULT 0,
    -- last event sequence number handed out for this task
    event_seq                 bigint NOT NULL DEFAULT 0,
    error                     jsonb,
    created_at                timestamptz NOT NULL DEFAULT now(),
    updated_at                timestamptz NOT NULL DEFAULT now(),
    finished_at               timestamptz
);

CREATE INDEX tasks_created_idx ON tasks (created_at DESC, id DESC);
CREATE INDEX tasks_status_created_idx ON tasks (status, created_at DESC, id DESC);

-- Immutable plan versions: a task keeps its full history.
CREATE TABLE plans (
    task_id             uuid NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    version             integer NOT NULL CHECK (version >= 1),
    origin              text NOT NULL CHECK (origin IN ('initial', 'repair', 'resume')
                                             OR origin LIKE 'replan:%'),
    reasoning           text NOT NULL DEFAULT '',
    estimated_duration  integer,
    steps               jsonb NOT NULL CHECK (jsonb_typeof(steps) = 'array'),
    created_at          timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (task_id, version)
);

CREATE TABLE steps (
    id                uuid PRIMARY KEY,
    task_id           uuid NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    plan_version      integer NOT NULL,
    step_key          text NOT NULL,
    position          integer NOT NULL,
    name              text NOT NULL DEFAULT '',
    tool              text NOT NULL,
    parameters        jsonb NOT NULL DEFAULT '{}'::jsonb,
    dependencies      text[] NOT NULL DEFAULT '{}',
    expected_output   text NOT NULL DEFAULT '',
    optional          boolean NOT NULL DEFAULT false,
    actions           jsonb NOT NULL DEFAULT '[]'::jsonb,
    status            text NOT NULL CHECK (status IN ('blocked', 'ready', 'running', 'succeeded', 'failed',
                                                      'skipped', 'superseded')),
    priority          integer NOT NULL DEFAULT 0,
    -- step_retry_count (SPEC §4): failed attempts since the step (re)started; reset by a repair
    retry_count       integer NOT NULL DEFAULT 0 CHECK (retry_count >= 0),
    -- attempts finished (rows in attempts); the running attempt is attempts + 1
    attempts          integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    -- times a worker died holding this step; at 3 the step is poison and fails
    rescue_count      integer NOT NULL DEFAULT 0 CHECK (rescue_count >= 0),
    -- lease: the fencing token grows with every claim; completion must present it
    lease_owner       uuid,
    lease_token       bigint NOT NULL DEFAULT 0,
    lease_expires_at  timestamptz,
    started_at        timestamptz,
    run_after         timestamptz NOT NULL DEFAULT now(),
    -- recovery overrides merged over parameters / replacing tool at the next attempt
    param_overrides   jsonb NOT NULL DEFAULT '{}'::jsonb,
    tool_override     text,
    output            jsonb,
    error             jsonb,
    created_at        timestamptz NOT NULL DEFAULT now(),
    updated_at        timestamptz NOT NULL DEFAULT now(),
    finished_at       timestamptz,
    FOREIGN KEY (task_id, plan_version) REFERENCES plans (task_id, version) ON DELETE CASCADE,
    CHECK ((status = 'running') = (lease_owner IS NOT NULL AND lease_expires_at IS NOT NULL))
);

-- One live row per step key and plan version; a repaired step's old row is kept as superseded.
CREATE UNIQUE INDEX steps_live_key ON steps (task_id, plan_version, step_key) WHERE status <> 'superseded';

-- The claim query only ever looks at ready steps: this index stays as small as the ready set,
-- however many finished steps the table holds.
CREATE INDEX steps_ready_idx ON steps (task_id, position) WHERE status = 'ready';
-- Rescue scans running steps by lease deadline.
CREATE INDEX steps_running_idx ON steps (lease_expires_at) WHERE status = 'running';
CREATE INDEX steps_running_task_idx ON steps (task_id) WHERE status = 'running';
-- Heartbeats extend every lease a worker holds.
CREATE INDEX steps_lease_owner_idx ON steps (lease_owner) WHERE status = 'running';
CREATE INDEX steps_task_plan_idx ON steps (task_id, plan_version, position);

-- One row per execution of a step. Written once, never updated.
CREATE TABLE attempts (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    task_id       uuid NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    step_id       uuid NOT NULL REFERENCES steps (id) ON DELETE CASCADE,
    step_key      text NOT NULL,
    plan_version  integer NOT NULL,
    attempt       integer NOT NULL CHECK (attempt >= 1),
    tool          text NOT NULL,
    parameters    jsonb NOT NULL DEFAULT '{}'::jsonb,
    status        text NOT NULL CHECK (status IN ('succeeded', 'failed')),
    output        jsonb,
    error         jsonb,
    -- error category copied out of error for reporting (tool_error, parameter_error, worker_lost, ...)
    error_category text,
    worker_id     uuid,
    started_at    timestamptz NOT NULL,
    finished_at   timestamptz NOT NULL,
    duration_ms   bigint GENERATED ALWAYS AS
                  ((extract(epoch FROM (finished_at - started_at)) * 1000)::bigint) STORED,
    UNIQUE (step_id, attempt)
);

CREATE INDEX attempts_task_idx ON attempts (task_id, id);

CREATE FUNCTION trellis_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION '% is append-only', TG_TABLE_NAME;
END;
$$;

CREATE TRIGGER attempts_append_only BEFORE UPDATE ON attempts
    FOR EACH ROW EXECUTE FUNCTION trellis_append_only();

-- Append-only audit log with a per-task sequence.
CREATE TABLE events (
    task_id  uuid NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    seq      bigint NOT NULL CHECK (seq >= 1),
    kind     text NOT NULL,
    payload  jsonb NOT NULL DEFAULT '{}'::jsonb,
    at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (task_id, seq)
);

CREATE TRIGGER events_append_only BEFORE UPDATE ON events
    FOR EACH ROW EXECUTE FUNCTION trellis_append_only();

CREATE TABLE workers (
    id              uuid PRIMARY KEY,
    host            text NOT NULL,
    pid             integer NOT NULL,
    concurrency     integer NOT NULL,
    started_at      timestamptz NOT NULL DEFAULT now(),
    last_heartbeat  timestamptz NOT NULL DEFAULT now(),
    stopped_at      timestamptz
);
