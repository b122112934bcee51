-- Recovery per template (fan-out issue, part 5): a map's items are steps of their own
-- (`m[0]`, `m[1]`, …), so their recovery actions count like any step's; this makes them, and
-- every other step's, add up to the template the task was submitted from, live and in the daily
-- roll-ups (so pruned history still counts).
--
-- recovery_outcomes gains the task's template ('' for a task not submitted from one) and
-- whether the step was a map's item; the roll-up shapes gain both as their last columns.
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
       r.step_key ~ '\[[0-9]+\]$' AS on_item
FROM recoveries r
JOIN attempts fa ON fa.id = r.failed_attempt_id
LEFT JOIN LATERAL (
    SELECT a.id, a.finished_at FROM attempts a
    WHERE a.task_id = r.task_id AND a.step_key = r.step_key AND a.status = 'succeeded' AND a.id > fa.id
    ORDER BY a.id LIMIT 1) s ON true;

ALTER TABLE recovery_rollups ADD COLUMN template text NOT NULL DEFAULT '';
ALTER TABLE recovery_rollups ADD COLUMN on_item boolean NOT NULL DEFAULT false;
ALTER TABLE recovery_rollups DROP CONSTRAINT recovery_rollups_day_tool_category_tier_action_key;
ALTER TABLE recovery_rollups ADD CONSTRAINT recovery_rollups_key
    UNIQUE (day, tool, category, tier, action, template, on_item);
COMMENT ON COLUMN recovery_rollups.template IS 'the template the task was submitted from; empty for a task without one (and for rows rolled up before it was kept)';
COMMENT ON COLUMN recovery_rollups.on_item IS 'whether the actions were on a map''s items';

CREATE OR REPLACE VIEW recovery_live_rollup AS
SELECT date_trunc('day', failed_at)::date AS day, tool, category, tier,
       count(*) AS actions,
       count(*) FILTER (WHERE succeeded_after) AS succeeded_after,
       count(*) FILTER (WHERE saved) AS saved,
       coalesce(sum(ms_to_recover) FILTER (WHERE saved), 0)::numeric AS saved_ms_sum,
       count(ms_to_recover) FILTER (WHERE saved) AS saved_ms_count,
       action, template, on_item
FROM recovery_outcomes GROUP BY 1, 2, 3, 4, action, template, on_item;

CREATE OR REPLACE VIEW recovery_all_rollup AS
SELECT day, tool, category, tier, actions, succeeded_after, saved, saved_ms_sum, saved_ms_count,
       action, template, on_item
FROM recovery_live_rollup
UNION ALL
SELECT day, tool, category, tier, actions, succeeded_after, saved, saved_ms_sum, saved_ms_count,
       action, template, on_item
FROM recovery_rollups;

-- Per day, template, tier and action: the actions taken on the template's tasks (of them, on
-- map items), how often the step succeeded later, how often this action saved it, and how long
-- that took.
CREATE VIEW recovery_by_template AS
SELECT day, template, tier, action,
       sum(actions)::bigint AS actions,
       (sum(actions) FILTER (WHERE on_item))::bigint AS item_actions,
       sum(succeeded_after)::bigint AS succeeded_after,
       sum(saved)::bigint AS saved,
       round(100.0 * sum(saved) / nullif(sum(actions), 0), 1) AS saved_pct,
       sum(saved_ms_sum) / nullif(sum(saved_ms_count), 0) AS mean_ms_to_recover
FROM recovery_all_rollup
WHERE template <> ''
GROUP BY day, template, tier, action;

COMMENT ON VIEW recovery_by_template IS 'recovery actions per day, template, tier and action (a map''s items count to their task''s template), with their outcomes';
