-- name: retention/rollup_recoveries
INSERT INTO recovery_rollups AS r (day, tool, category, tier, action, template, on_item, tenant,
                                   actions, succeeded_after, saved, saved_ms_sum, saved_ms_count)
SELECT date_trunc('day', failed_at)::date, tool, category, tier, action, template, on_item, tenant,
       count(*), count(*) FILTER (WHERE succeeded_after), count(*) FILTER (WHERE saved),
       coalesce(sum(ms_to_recover) FILTER (WHERE saved), 0),
       count(ms_to_recover) FILTER (WHERE saved)
FROM recovery_outcomes WHERE task_id = ANY($1)
GROUP BY 1, 2, 3, 4, 5, 6, 7, 8 ORDER BY 1, 2, 3, 4, 5, 6, 7, 8
ON CONFLICT (day, tool, category, tier, action, template, on_item, tenant) DO UPDATE SET
    actions = r.actions + excluded.actions,
    succeeded_after = r.succeeded_after + excluded.succeeded_after,
    saved = r.saved + excluded.saved,
    saved_ms_sum = r.saved_ms_sum + excluded.saved_ms_sum,
    saved_ms_count = r.saved_ms_count + excluded.saved_ms_count
