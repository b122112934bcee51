-- Retention (issue 10): finished tasks older than `[retention] finished_task_ttl_secs` are
-- deleted with all their rows, in bounded batches, by the workers' maintenance. Before a batch
-- is deleted its contribution to the recovery statistics is added to the daily roll-ups below,
-- and the statistics views count live rows and roll-ups together, so they give the same numbers
-- before and after a prune.

-- Attempts per day of finishing, tool, status and error category.
CREATE TABLE attempt_rollups (
    day             date NOT NULL,
    tool            text NOT NULL,
    status          text NOT NULL,
    error_category  text,
    attempts        bigint NOT NULL,
    UNIQUE NULLS NOT DISTINCT (day, tool, status, error_category)
);

-- Recovery actions per day of the failure, tool, category and tier, with their outcomes.
CREATE TABLE recovery_rollups (
    day              date NOT NULL,
    tool             text NOT NULL,
    category         text NOT NULL,
    tier             integer NOT NULL,
    actions          bigint NOT NULL,
    succeeded_after  bigint NOT NULL,
    saved            bigint NOT NULL,
    -- sum and count of ms_to_recover over saved actions (the mean is their ratio)
    saved_ms_sum     numeric NOT NULL,
    saved_ms_count   bigint NOT NULL,
    UNIQUE (day, tool, category, tier)
);

-- Tasks per day of submission and final status.
CREATE TABLE task_rollups (
    day                       date NOT NULL,
    status                    text NOT NULL,
    tasks                     bigint NOT NULL,
    attempts                  bigint NOT NULL,
    failures                  bigint NOT NULL,
    tasks_with_recovery       bigint NOT NULL,
    succeeded_after_recovery  bigint NOT NULL,
    repairs                   bigint NOT NULL,
    replans                   bigint NOT NULL,
    score_sum                 numeric NOT NULL,
    score_count               bigint NOT NULL,
    duration_ms_sum           numeric NOT NULL,
    duration_ms_count         bigint NOT NULL,
    UNIQUE (day, status)
);

-- What the prune scans, and the foreign keys its cascading delete follows.
CREATE INDEX tasks_finished_idx ON tasks (finished_at)
    WHERE status IN ('succeeded', 'failed', 'cancelled');
CREATE INDEX decisions_step_idx ON decisions (step_id) WHERE step_id IS NOT NULL;
CREATE INDEX reflections_step_idx ON reflections (step_id) WHERE step_id IS NOT NULL;
CREATE INDEX recoveries_failed_attempt_idx ON recoveries (failed_attempt_id);
CREATE INDEX llm_calls_decision_idx ON llm_calls (decision_id) WHERE decision_id IS NOT NULL;

-- The statistics views, over live rows and roll-ups. Same columns and types as before.
DROP VIEW recovery_by_tool, recovery_by_category, recovery_by_tier, task_outcomes;

-- Live recovery actions in roll-up shape.
CREATE VIEW recovery_live_rollup AS
SELECT date_trunc('day', failed_at)::date AS day, tool, category, tier,
       count(*) AS actions,
       count(*) FILTER (WHERE succeeded_after) AS succeeded_after,
       count(*) FILTER (WHERE saved) AS saved,
       coalesce(sum(ms_to_recover) FILTER (WHERE saved), 0)::numeric AS saved_ms_sum,
       count(ms_to_recover) FILTER (WHERE saved) AS saved_ms_count
FROM recovery_outcomes GROUP BY 1, 2, 3, 4;

CREATE VIEW recovery_all_rollup AS
SELECT * FROM recovery_live_rollup
UNION ALL
SELECT day, tool, category, tier, actions, succeeded_after, saved, saved_ms_sum, saved_ms_count
FROM recovery_rollups;

CREATE VIEW attempt_all_rollup AS
SELECT date_trunc('day', finished_at)::date AS day, tool, status, error_category, count(*) AS attempts
FROM attempts GROUP BY 1, 2, 3, 4
UNION ALL
SELECT day, tool, status, error_category, attempts FROM attempt_rollups;

-- Per tool (the tool of the attempt) and day.
CREATE VIEW recovery_by_tool AS
WITH att AS (
    SELECT day, tool,
           sum(attempts)::bigint AS attempts,
           coalesce(sum(attempts) FILTER (WHERE status = 'failed'), 0)::bigint AS failures,
           coalesce(sum(attempts) FILTER (WHERE status = 'failed' AND error_category = 'worker_lost'), 0)::bigint
               AS lost_worker_failures
    FROM attempt_all_rollup GROUP BY 1, 2
), rec AS (
    SELECT day, tool,
           coalesce(sum(actions) FILTER (WHERE tier = 1), 0)::bigint AS tier1_actions,
           coalesce(sum(actions) FILTER (WHERE tier = 2), 0)::bigint AS tier2_actions,
           coalesce(sum(actions) FILTER (WHERE tier = 3), 0)::bigint AS tier3_actions,
           coalesce(sum(saved) FILTER (WHERE tier = 1), 0)::bigint AS saved_by_tier1,
           coalesce(sum(saved) FILTER (WHERE tier = 2), 0)::bigint AS saved_by_tier2,
           coalesce(sum(saved) FILTER (WHERE tier = 3), 0)::bigint AS saved_by_tier3,
           sum(saved)::bigint AS recovered,
           sum(saved_ms_sum) / nullif(sum(saved_ms_count), 0) AS mean_ms_to_recover
    FROM recovery_all_rollup GROUP BY 1, 2
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
    SELECT day, error_category AS category, sum(attempts)::bigint AS failures
    FROM attempt_all_rollup WHERE status = 'failed' GROUP BY 1, 2
), rec AS (
    SELECT day, category,
           coalesce(sum(actions) FILTER (WHERE tier = 1), 0)::bigint AS tier1_actions,
           coalesce(sum(actions) FILTER (WHERE tier = 2), 0)::bigint AS tier2_actions,
           coalesce(sum(actions) FILTER (WHERE tier = 3), 0)::bigint AS tier3_actions,
           sum(saved)::bigint AS recovered,
           sum(saved_ms_sum) / nullif(sum(saved_ms_count), 0) AS mean_ms_to_recover
    FROM recovery_all_rollup GROUP BY 1, 2
)
SELECT att.day, att.category, att.failures,
       coalesce(rec.tier1_actions, 0) AS tier1_actions, coalesce(rec.tier2_actions, 0) AS tier2_actions,
       coalesce(rec.tier3_actions, 0) AS tier3_actions, coalesce(rec.recovered, 0) AS recovered,
       rec.mean_ms_to_recover
FROM att LEFT JOIN rec ON rec.day = att.day AND rec.category = att.category;

-- Per tier and day: actions taken, how many were followed by a success, how many saved the step.
CREATE VIEW recovery_by_tier AS
SELECT day, tier,
       sum(actions)::bigint AS actions,
       sum(succeeded_after)::bigint AS succeeded_after,
       sum(saved)::bigint AS saved,
       round(100.0 * sum(saved) / sum(actions), 1) AS saved_pct,
       sum(saved_ms_sum) / nullif(sum(saved_ms_count), 0) AS mean_ms_to_recover
FROM recovery_all_rollup GROUP BY 1, 2;

-- One row per live task with what its day of submission and status add to the roll-up
-- (the prune rolls up the rows of the tasks it deletes from here too).
CREATE VIEW task_rollup_rows AS
SELECT t.id, date_trunc('day', t.created_at)::date AS day, t.status, t.final_score,
       t.task_replan_count AS replans, t.single_step_repair_count AS repairs,
       (extract(epoch FROM (coalesce(t.finished_at, now()) - t.created_at)) * 1000)::bigint AS duration_ms,
       (SELECT count(*) FROM attempts a WHERE a.task_id = t.id) AS attempts,
       (SELECT count(*) FROM attempts a WHERE a.task_id = t.id AND a.status = 'failed') AS failures,
       EXISTS (SELECT 1 FROM recoveries r WHERE r.task_id = t.id) AS recovered
FROM tasks t;

-- Live tasks in roll-up shape (per day of submission and status).
CREATE VIEW task_live_rollup AS
SELECT day, status, count(*) AS tasks,
       sum(attempts)::bigint AS attempts, sum(failures)::bigint AS failures,
       count(*) FILTER (WHERE recovered) AS tasks_with_recovery,
       count(*) FILTER (WHERE recovered AND status = 'succeeded') AS succeeded_after_recovery,
       sum(repairs)::bigint AS repairs, sum(replans)::bigint AS replans,
       coalesce(sum(final_score), 0)::numeric AS score_sum, count(final_score) AS score_count,
       coalesce(sum(duration_ms), 0)::numeric AS duration_ms_sum, count(duration_ms) AS duration_ms_count
FROM task_rollup_rows GROUP BY 1, 2;

-- Per final status and day of submission.
CREATE VIEW task_outcomes AS
WITH all_rows AS (
    SELECT * FROM task_live_rollup
    UNION ALL
    SELECT day, status, tasks, attempts, failures, tasks_with_recovery, succeeded_after_recovery,
           repairs, replans, score_sum, score_count, duration_ms_sum, duration_ms_count
    FROM task_rollups
)
SELECT day, status, sum(tasks)::bigint AS tasks,
       sum(attempts) AS attempts, sum(failures) AS failures,
       sum(tasks_with_recovery)::bigint AS tasks_with_recovery,
       sum(succeeded_after_recovery)::bigint AS succeeded_after_recovery,
       sum(repairs)::bigint AS repairs, sum(replans)::bigint AS replans,
       (sum(score_sum) / nullif(sum(score_count), 0))::double precision AS mean_final_score,
       sum(duration_ms_sum) / nullif(sum(duration_ms_count), 0) AS mean_duration_ms
FROM all_rows GROUP BY 1, 2;
