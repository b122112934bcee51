-- The recovery statistics per tenant (fairness issue, part 3). The roll-ups keep each row's
-- tenant, so pruned history still counts to it. The statistics views keep their columns and
-- their numbers: they count the tenant a transaction names with
-- `set_config('trellis.tenant', <tenant>, true)` (transaction-scoped: no session state, so a
-- transaction pooler is fine), and every tenant when none is named.

-- Whether a row of `tenant` is counted: no tenant named (or an empty name, what a
-- transaction-scoped setting leaves behind), or this one.
CREATE FUNCTION trellis_counts(tenant text) RETURNS boolean LANGUAGE sql STABLE AS $$
    SELECT coalesce(nullif(current_setting('trellis.tenant', true), ''), tenant) = tenant
$$;

-- The tenant a transaction named (none: every tenant).
CREATE FUNCTION trellis_counted_tenant() RETURNS text LANGUAGE sql STABLE AS $$
    SELECT nullif(current_setting('trellis.tenant', true), '')
$$;

ALTER TABLE attempt_rollups ADD COLUMN tenant trellis_tenant NOT NULL DEFAULT 'default';
ALTER TABLE attempt_rollups DROP CONSTRAINT attempt_rollups_day_tool_status_error_category_key;
ALTER TABLE attempt_rollups ADD CONSTRAINT attempt_rollups_key
    UNIQUE NULLS NOT DISTINCT (day, tool, status, error_category, tenant);

ALTER TABLE recovery_rollups ADD COLUMN tenant trellis_tenant NOT NULL DEFAULT 'default';
ALTER TABLE recovery_rollups DROP CONSTRAINT recovery_rollups_key;
ALTER TABLE recovery_rollups ADD CONSTRAINT recovery_rollups_key
    UNIQUE (day, tool, category, tier, action, template, on_item, tenant);

ALTER TABLE task_rollups ADD COLUMN tenant trellis_tenant NOT NULL DEFAULT 'default';
ALTER TABLE task_rollups DROP CONSTRAINT task_rollups_day_status_key;
ALTER TABLE task_rollups ADD CONSTRAINT task_rollups_key UNIQUE (day, status, tenant);

COMMENT ON COLUMN attempt_rollups.tenant IS 'the tenant of the attempts'' tasks';
COMMENT ON COLUMN recovery_rollups.tenant IS 'the tenant of the actions'' tasks';
COMMENT ON COLUMN task_rollups.tenant IS 'the tenant of the tasks';

-- recovery_outcomes gains the task's tenant (its last column)
CREATE OR REPLACE VIEW recovery_outcomes AS
SELECT r.id, r.task_id, r.step_key, r.plan_version, r.tier, r.action, r.tool, r.category,
       r.created_at, fa.finished_at AS failed_at,
       s.id IS NOT NULL AS succeeded_after,
       s.finished_at AS succeeded_at,
       (extract(epoch FROM (s.finished_at - fa.finished_at)) * 1000)::bigint AS ms_to_recover,
       s.id IS NOT NULL AND NOT EXISTS (
           SELECT 1 FROM recoveries r2
           WHERE r2.task_id = r.task_id AND r2.step_key = r.step_key AND r2.id > r.id
             AND r2.created_at <= s.finished_at) AS saved,
       coalesce((SELECT substr(p.origin, 10) FROM plans p
                 WHERE p.task_id = r.task_id AND p.version = 1 AND p.origin LIKE 'template:%'),
                '') AS template,
       r.step_key ~ '\[[0-9]+\]$' AS on_item,
       (SELECT t.tenant::text FROM tasks t WHERE t.id = r.task_id) AS tenant
FROM recoveries r
JOIN attempts fa ON fa.id = r.failed_attempt_id
LEFT JOIN LATERAL (
    SELECT a.id, a.finished_at FROM attempts a
    WHERE a.task_id = r.task_id AND a.step_key = r.step_key AND a.status = 'succeeded' AND a.id > fa.id
    ORDER BY a.id LIMIT 1) s ON true;

CREATE OR REPLACE VIEW recovery_live_rollup AS
SELECT date_trunc('day', failed_at)::date AS day, tool, category, tier,
       count(*) AS actions,
       count(*) FILTER (WHERE succeeded_after) AS succeeded_after,
       count(*) FILTER (WHERE saved) AS saved,
       coalesce(sum(ms_to_recover) FILTER (WHERE saved), 0)::numeric AS saved_ms_sum,
       count(ms_to_recover) FILTER (WHERE saved) AS saved_ms_count,
       action, template, on_item
FROM recovery_outcomes
WHERE trellis_counts(tenant)
GROUP BY 1, 2, 3, 4, action, template, on_item;

CREATE OR REPLACE VIEW recovery_all_rollup AS
SELECT day, tool, category, tier, actions, succeeded_after, saved, saved_ms_sum, saved_ms_count,
       action, template, on_item
FROM recovery_live_rollup
UNION ALL
SELECT day, tool, category, tier, actions, succeeded_after, saved, saved_ms_sum, saved_ms_count,
       action, template, on_item
FROM recovery_rollups
WHERE trellis_counts(tenant);

-- the live attempts of one tenant are found through their tasks, only when a tenant is named
CREATE OR REPLACE VIEW attempt_all_rollup AS
SELECT date_trunc('day', finished_at)::date AS day, tool, status, error_category, count(*) AS attempts
FROM attempts a
WHERE trellis_counted_tenant() IS NULL
   OR EXISTS (SELECT 1 FROM tasks t WHERE t.id = a.task_id AND t.tenant = trellis_counted_tenant())
GROUP BY 1, 2, 3, 4
UNION ALL
SELECT day, tool, status, error_category, attempts FROM attempt_rollups
WHERE trellis_counts(tenant);

-- task_rollup_rows gains the task's tenant (its last column)
CREATE OR REPLACE VIEW task_rollup_rows AS
SELECT t.id, date_trunc('day', t.created_at)::date AS day, t.status, t.final_score,
       t.task_replan_count AS replans, t.single_step_repair_count AS repairs,
       (extract(epoch FROM (coalesce(t.finished_at, now()) - t.created_at)) * 1000)::bigint AS duration_ms,
       (SELECT count(*) FROM attempts a WHERE a.task_id = t.id) AS attempts,
       (SELECT count(*) FROM attempts a WHERE a.task_id = t.id AND a.status = 'failed') AS failures,
       EXISTS (SELECT 1 FROM recoveries r WHERE r.task_id = t.id) AS recovered,
       t.tenant::text AS tenant
FROM tasks t;

CREATE OR REPLACE VIEW task_live_rollup AS
SELECT day, status, count(*) AS tasks,
       sum(attempts)::bigint AS attempts, sum(failures)::bigint AS failures,
       count(*) FILTER (WHERE recovered) AS tasks_with_recovery,
       count(*) FILTER (WHERE recovered AND status = 'succeeded') AS succeeded_after_recovery,
       sum(repairs)::bigint AS repairs, sum(replans)::bigint AS replans,
       coalesce(sum(final_score), 0)::numeric AS score_sum, count(final_score) AS score_count,
       coalesce(sum(duration_ms), 0)::numeric AS duration_ms_sum, count(duration_ms) AS duration_ms_count
FROM task_rollup_rows
WHERE trellis_counts(tenant)
GROUP BY 1, 2;

CREATE OR REPLACE VIEW task_outcomes AS
WITH all_rows AS (
    SELECT * FROM task_live_rollup
    UNION ALL
    SELECT day, status, tasks, attempts, failures, tasks_with_recovery, succeeded_after_recovery,
           repairs, replans, score_sum, score_count, duration_ms_sum, duration_ms_count
    FROM task_rollups
    WHERE trellis_counts(tenant)
)
SELECT day, status, sum(tasks)::bigint AS tasks,
       sum(attempts) AS attempts, sum(failures) AS failures,
       sum(tasks_with_recovery)::bigint AS tasks_with_recovery,
       sum(succeeded_after_recovery)::bigint AS succeeded_after_recovery,
       sum(repairs)::bigint AS repairs, sum(replans)::bigint AS replans,
       (sum(score_sum) / nullif(sum(score_count), 0))::double precision AS mean_final_score,
       sum(duration_ms_sum) / nullif(sum(duration_ms_count), 0) AS mean_duration_ms
FROM all_rows GROUP BY 1, 2;
