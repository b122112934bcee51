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

-- How long steps waited, per day, template and kind (`wait_times`): live waits plus the daily
-- roll-up retention writes before it deletes finished tasks (with their waits).
CREATE TABLE wait_rollups (
    day         date NOT NULL,
    template    text NOT NULL,
    kind        text NOT NULL,
    outcome     text NOT NULL,
    waits       bigint NOT NULL,
    waited_secs_sum double precision NOT NULL,
    waited_secs_max double precision NOT NULL,
    PRIMARY KEY (day, template, kind, outcome)
);

-- one row per finished wait: its day (when it began), the task's template ('' when none), its
-- kind and outcome, how long it waited
CREATE VIEW wait_rows AS
SELECT w.task_id, (w.created_at AT TIME ZONE 'UTC')::date AS day,
       coalesce((SELECT substr(p.origin, 10) FROM plans p
                 WHERE p.task_id = w.task_id AND p.version = 1 AND p.origin LIKE 'template:%'), '') AS template,
       w.kind, coalesce(w.resolution ->> 'outcome', w.status) AS outcome,
       extract(epoch FROM w.resolved_at - w.created_at)::float8 AS waited_secs
FROM waits w
WHERE w.resolved_at IS NOT NULL;

CREATE VIEW wait_times AS
SELECT day, template, kind, outcome, sum(waits)::bigint AS waits,
       sum(waited_secs_sum) / nullif(sum(waits), 0) AS mean_waited_secs,
       max(waited_secs_max) AS max_waited_secs
FROM (
    SELECT day, template, kind, outcome, count(*) AS waits, sum(waited_secs) AS waited_secs_sum,
           max(waited_secs) AS waited_secs_max
    FROM wait_rows GROUP BY 1, 2, 3, 4
    UNION ALL
    SELECT day, template, kind, outcome, waits, waited_secs_sum, waited_secs_max FROM wait_rollups
) x
GROUP BY 1, 2, 3, 4;

COMMENT ON VIEW wait_times IS 'How long steps waited (for people: kind approval), per day, template, kind and outcome; live waits plus the retention roll-up.';
