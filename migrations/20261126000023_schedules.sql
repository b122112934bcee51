-- Cron schedules (waits issue): exactly one task per tick, fleet-wide, through crashes (the
-- task's idempotency key is schedule:<id>:<tick>); missed ticks make one catch-up run.
CREATE TABLE schedules (
    id            text PRIMARY KEY CHECK (id ~ '^[A-Za-z0-9_.:-]{1,128}$'),
    cron          text NOT NULL,
    timezone      text NOT NULL DEFAULT 'UTC',
    description   text NOT NULL DEFAULT '',
    -- what each tick submits: a template with its input, or a plan
    template      text,
    input         jsonb,
    plan          jsonb,
    priority      integer NOT NULL DEFAULT 0,
    -- the task's limits, resolved over the defaults when the schedule was written
    limits        jsonb NOT NULL,
    enabled       boolean NOT NULL DEFAULT true,
    overlap       text NOT NULL DEFAULT 'allow' CHECK (overlap IN ('allow', 'skip')),
    -- the next tick to fire (database clock); null when no tick is left
    next_fire_at  timestamptz,
    last_tick     timestamptz,
    last_task_id  uuid,
    last_error    text,
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    CHECK ((template IS NULL) <> (plan IS NULL))
);
CREATE INDEX schedules_due_idx ON schedules (next_fire_at) WHERE enabled;

-- The schedule a task was submitted by (no foreign key: a deleted schedule keeps its tasks).
ALTER TABLE tasks ADD COLUMN schedule_id text;

COMMENT ON TABLE schedules IS 'Cron schedules: one task per tick (idempotency key schedule:<id>:<tick>), fired by any worker under the row lock.';
