-- Three-tier recovery: claimable decisions, reflections, evaluations, the recovery log and the
-- reporting views documented in docs/sql-reporting.md.

ALTER TABLE tasks
    ADD COLUMN step_reflection    boolean NOT NULL DEFAULT true,
    ADD COLUMN auto_reflection    boolean NOT NULL DEFAULT true,
    ADD COLUMN success_threshold  double precision NOT NULL DEFAULT 80 CHECK (success_threshold BETWEEN 0 AND 100),
    ADD COLUMN final_score        double precision,
    ADD COLUMN stop_reason        text;

-- A brain call is claimable work, like a step: lease + fencing token. The worker that creates a
-- decision holds its lease at once and runs it; if it dies, rescue re-queues it for any worker.
CREATE TABLE decisions (
    id                uuid PRIMARY KEY,
    task_id           uuid NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    kind              text NOT NULL CHECK (kind IN ('step_reflection', 'step_repair', 'overall_reflection',
                                                    'replan', 'evaluation')),
    -- the failed step (step decisions) or the step whose failure led here (task decisions)
    step_id           uuid REFERENCES steps (id) ON DELETE CASCADE,
    -- task.state_version when the decision was created: task decisions apply only if unchanged
    task_version      bigint NOT NULL,
    input             jsonb NOT NULL DEFAULT '{}'::jsonb,
    status            text NOT NULL CHECK (status IN ('pending', 'running', 'done', 'cancelled')),
    lease_owner       uuid,
    lease_token       bigint NOT NULL DEFAULT 0,
    lease_expires_at  timestamptz,
    rescue_count      integer NOT NULL DEFAULT 0,
    run_after         timestamptz NOT NULL DEFAULT now(),
    created_at        timestamptz NOT NULL DEFAULT now(),
    finished_at       timestamptz,
    CHECK ((status = 'running') = (lease_owner IS NOT NULL AND lease_expires_at IS NOT NULL))
);

CREATE INDEX decisions_pending_idx ON decisions (run_after, created_at) WHERE status = 'pending';
CREATE INDEX decisions_running_idx ON decisions (lease_expires_at) WHERE status = 'running';
CREATE INDEX decisions_task_idx ON decisions (task_id);
-- at most one open decision per task-level kind and per failed step
CREATE UNIQUE INDEX decisions_one_open_per_step ON decisions (step_id, kind)
    WHERE status IN ('pending', 'running') AND kind IN ('step_reflection', 'step_repair');
CREATE UNIQUE INDEX decisions_one_open_per_task ON decisions (task_id)
    WHERE status IN ('pending', 'running') AND kind IN ('overall_reflection', 'replan', 'evaluation');

CREATE TABLE reflections (
    id                    bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    task_id               uuid NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    level                 text NOT NULL CHECK (level IN ('step', 'overall')),
    step_id               uuid REFERENCES steps (id) ON DELETE CASCADE,
    step_key              text,
    plan_version          integer NOT NULL,
    round                 integer NOT NULL,
    root_cause_category   text,
    is_recoverable        boolean,
    suggested_action      jsonb,
    should_replan         boolean,
    replanning_strategy   jsonb,
    is_fallback           boolean NOT NULL DEFAULT false,
    body                  jsonb NOT NULL,
    -- the brain's raw answer, kept for audit
    raw                   text,
    created_at            timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX reflections_task_idx ON reflections (task_id, id);

CREATE TABLE evaluations (
    id                       bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    task_id                  uuid NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    round                    integer NOT NULL,
    plan_version             integer NOT NULL,
    overall_score            double precision NOT NULL CHECK (overall_score BETWEEN 0 AND 100),
    completeness             double precision NOT NULL,
    correctness              double precision NOT NULL,
    efficiency               double precision NOT NULL,
    reliability              double precision NOT NULL,
    is_successful            boolean NOT NULL,
    successes                jsonb NOT NULL DEFAULT '[]'::jsonb,
    failures                 jsonb NOT NULL DEFAULT '[]'::jsonb,
    improvement_suggestions  jsonb NOT NULL DEFAULT '[]'::jsonb,
    raw                      text,
    created_at               timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX evaluations_task_idx ON evaluations (task_id, id);

-- One row per recovery action applied after a failed attempt (append-only).
-- tier 1 = step retry (retry_with_params / retry_with_tool), 2 = single-step repair,
-- 3 = task level (replan:<strategy>, intervention, fail).
CREATE TABLE recoveries (
    id                 bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    task_id            uuid NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    step_key           text NOT NULL,
    plan_version       integer NOT NULL,
    failed_attempt_id  bigint NOT NULL REFERENCES attempts (id) ON DELETE CASCADE,
    tier               integer NOT NULL CHECK (tier IN (1, 2, 3)),
    action             text NOT NULL,
    tool               text NOT NULL,
    category           text NOT NULL,
    created_at         timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX recoveries_task_step_idx ON recoveries (task_id, step_key, id);
CREATE TRIGGER recoveries_append_only BEFORE UPDATE ON recoveries
    FOR EACH ROW EXECUTE FUNCTION trellis_append_only();
CREATE INDEX attempts_task_step_idx ON attempts (task_id, step_key, id);

-- Each recovery action with its outcome: the step's next successful attempt after the failure
-- (any plan version), and whether this action was the last one before that success (it "saved"
-- the step).
CREATE VIEW recovery_outcomes AS
SELECT r.id, r.task_id, r.step_key, r.plan_version, r.tier, r.action, r.tool, r.category,
       r.created_at, fa.finished_at AS failed_at,
       s.id IS NOT NULL AS succeeded_after,
       s.finished_at AS succeeded_at,
       (extract(epoch FROM (s.finished_at - fa.finished_at)) * 1000)::bigint AS ms_to_recover,
       s.id IS NOT NULL AND NOT EXISTS (
           SELECT 1 FROM recoveries r2
           WHERE r2.task_id = r.task_id AND r2.step_key = r.step_key AND r2.id > r.id
             AND r2.created_at <= s.finished_at) AS saved
FROM recoveries r
JOIN attempts fa ON fa.id = r.failed_attempt_id
LEFT JOIN LATERAL (
    SELECT a.id, a.finished_at FROM attempts a
    WHERE a.task_id = r.task_id AND a.step_key = r.step_key AND a.status = 'succeeded' AND a.id > fa.id
    ORDER BY a.id LIMIT 1) s ON true;

-- Per tool (the tool of the attempt) and day.
CREATE VIEW recovery_by_tool AS
WITH att AS (
    SELECT date_trunc('day', finished_at)::date AS day, tool,
           count(*) AS attempts,
           count(*) FILTER (WHERE status = 'failed') AS failures,
           count(*) FILTER (WHERE status = 'failed' AND error_category = 'worker_lost') AS lost_worker_failures
    FROM attempts GROUP BY 1, 2
), rec AS (
    SELECT date_trunc('day', failed_at)::date AS day, tool,
           count(*) FILTER (WHERE tier = 1) AS tier1_actions,
           count(*) FILTER (WHERE tier = 2) AS tier2_actions,
           count(*) FILTER (WHERE tier = 3) AS tier3_actions,
           count(*) FILTER (WHERE saved AND tier = 1) AS saved_by_tier1,
           count(*) FILTER (WHERE saved AND tier = 2) AS saved_by_tier2,
           count(*) FILTER (WHERE saved AND tier = 3) AS saved_by_tier3,
           count(*) FILTER (WHERE saved) AS recovered,
           avg(ms_to_recover) FILTER (WHERE saved) AS mean_ms_to_recover
    FROM recovery_outcomes GROUP BY 1, 2
)
SELECT att.day, att.tool, att.attempts, att.failures, att.lost_worker_failures,
       coalesce(rec.tier1_actions, 0) AS tier1_actions, coalesce(rec.tier2_actions, 0) AS tier2_actions,
       coalesce(rec.tier3_actions, 0) AS tier3_actions,
       coalesce(rec.saved_by_tier1, 0) AS saved_by_tier1, coalesce(rec.saved_by_tier2, 0) AS saved_by_tier2,
       coalesce(rec.saved_by_tier3, 0) AS saved_by_tier3, coalesce(rec.recovered, 0) AS recovered,
       rec.mean_ms_to_recover
FROM att LEFT JOIN rec ON rec.day = att.day AND rec.tool = att.tool;

-- Per root-cause category (of the failed attempt) and day.
CREATE VIEW recovery_by_category AS
WITH att AS (
    SELECT date_trunc('day', finished_at)::date AS day, error_category AS category, count(*) AS failures
    FROM attempts WHERE status = 'failed' GROUP BY 1, 2
), rec AS (
    SELECT date_trunc('day', failed_at)::date AS day, category,
           count(*) FILTER (WHERE tier = 1) AS tier1_actions,
           count(*) FILTER (WHERE tier = 2) AS tier2_actions,
           count(*) FILTER (WHERE tier = 3) AS tier3_actions,
           count(*) FILTER (WHERE saved) AS recovered,
           avg(ms_to_recover) FILTER (WHERE saved) AS mean_ms_to_recover
    FROM recovery_outcomes GROUP BY 1, 2
)
SELECT att.day, att.category, att.failures,
       coalesce(rec.tier1_actions, 0) AS tier1_actions, coalesce(rec.tier2_actions, 0) AS tier2_actions,
       coalesce(rec.tier3_actions, 0) AS tier3_actions, coalesce(rec.recovered, 0) AS recovered,
       rec.mean_ms_to_recover
FROM att LEFT JOIN rec ON rec.day = att.day AND rec.category = att.category;

-- Per tier and day: actions taken, how many were followed by a success, how many saved the step.
CREATE VIEW recovery_by_tier AS
SELECT date_trunc('day', failed_at)::date AS day, tier,
       count(*) AS actions,
       count(*) FILTER (WHERE succeeded_after) AS succeeded_after,
       count(*) FILTER (WHERE saved) AS saved,
       round(100.0 * count(*) FILTER (WHERE saved) / count(*), 1) AS saved_pct,
       avg(ms_to_recover) FILTER (WHERE saved) AS mean_ms_to_recover
FROM recovery_outcomes GROUP BY 1, 2;

-- Per final status and day of submission.
CREATE VIEW task_outcomes AS
WITH per_task AS (
    SELECT t.id, date_trunc('day', t.created_at)::date AS day, t.status, t.final_score,
           t.task_replan_count, t.single_step_repair_count,
           (extract(epoch FROM (coalesce(t.finished_at, now()) - t.created_at)) * 1000)::bigint AS duration_ms,
           (SELECT count(*) FROM attempts a WHERE a.task_id = t.id) AS attempts,
           (SELECT count(*) FROM attempts a WHERE a.task_id = t.id AND a.status = 'failed') AS failures,
           (SELECT count(*) FROM recoveries r WHERE r.task_id = t.id) AS recoveries
    FROM tasks t
)
SELECT day, status, count(*) AS tasks,
       sum(attempts) AS attempts, sum(failures) AS failures,
       count(*) FILTER (WHERE recoveries > 0) AS tasks_with_recovery,
       count(*) FILTER (WHERE recoveries > 0 AND status = 'succeeded') AS succeeded_after_recovery,
       sum(single_step_repair_count) AS repairs, sum(task_replan_count) AS replans,
       avg(final_score) AS mean_final_score,
       avg(duration_ms) AS mean_duration_ms
FROM per_task GROUP BY 1, 2;
