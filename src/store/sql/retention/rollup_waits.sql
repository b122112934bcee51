-- name: retention/rollup_waits
INSERT INTO wait_rollups AS r (day, template, kind, outcome, waits, waited_secs_sum, waited_secs_max)
SELECT day, template, kind, outcome, count(*), sum(waited_secs), max(waited_secs)
FROM wait_rows WHERE task_id = ANY($1)
GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4
ON CONFLICT (day, template, kind, outcome) DO UPDATE SET
    waits = r.waits + excluded.waits,
    waited_secs_sum = r.waited_secs_sum + excluded.waited_secs_sum,
    waited_secs_max = greatest(r.waited_secs_max, excluded.waited_secs_max)
