-- Recovery by action, and so by replanning strategy (the dashboard's recovery page, and any SQL
-- over it): `recovery_outcomes.action` is `retry_with_params`, `retry_with_tool`, `repair`,
-- `repair_failed`, `replan:<strategy>`, `replan_failed`, `intervention` or `fail`. The daily
-- roll-ups keep it too, so deleted history still counts; rows rolled up before this migration
-- have the action '' (not recorded).
ALTER TABLE recovery_rollups ADD COLUMN action text NOT NULL DEFAULT '';
ALTER TABLE recovery_rollups DROP CONSTRAINT recovery_rollups_day_tool_category_tier_key;
ALTER TABLE recovery_rollups ADD CONSTRAINT recovery_rollups_day_tool_category_tier_action_key
    UNIQUE (day, tool, category, tier, action);
COMMENT ON COLUMN recovery_rollups.action IS 'the recovery action (replan:<strategy> for a replan); empty for rows rolled up before it was kept';

-- The live and combined roll-up shapes gain the action as their last column (the views over
-- them name their columns, so they are unchanged).
CREATE OR REPLACE VIEW recovery_live_rollup AS
SELECT date_trunc('day', failed_at)::date AS day, tool, category, tier,
       count(*) AS actions,
       count(*) FILTER (WHERE succeeded_after) AS succeeded_after,
       count(*) FILTER (WHERE saved) AS saved,
       coalesce(sum(ms_to_recover) FILTER (WHERE saved), 0)::numeric AS saved_ms_sum,
       count(ms_to_recover) FILTER (WHERE saved) AS saved_ms_count,
       action
FROM recovery_outcomes GROUP BY 1, 2, 3, 4, action;

CREATE OR REPLACE VIEW recovery_all_rollup AS
SELECT * FROM recovery_live_rollup
UNION ALL
SELECT day, tool, category, tier, actions, succeeded_after, saved, saved_ms_sum, saved_ms_count, action
FROM recovery_rollups;

-- Per day, tier and action: how often each action was taken, how often the step succeeded
-- later, how often this action saved it, and how long that took.
CREATE VIEW recovery_by_action AS
SELECT day, tier, action,
       sum(actions)::bigint AS actions,
       sum(succeeded_after)::bigint AS succeeded_after,
       sum(saved)::bigint AS saved,
       round(100.0 * sum(saved) / nullif(sum(actions), 0), 1) AS saved_pct,
       sum(saved_ms_sum) / nullif(sum(saved_ms_count), 0) AS mean_ms_to_recover
FROM recovery_all_rollup
GROUP BY day, tier, action;

COMMENT ON VIEW recovery_by_action IS 'recovery actions per day, tier and action (replan:<strategy> for replans), with their outcomes';
