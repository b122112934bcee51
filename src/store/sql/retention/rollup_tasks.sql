-- name: retention/rollup_tasks
INSERT INTO task_rollups AS r (day, status, tenant, tasks, attempts, failures,
                               tasks_with_recovery, succeeded_after_recovery, repairs, replans,
                               score_sum, score_count, duration_ms_sum, duration_ms_count)
SELECT day, status, tenant, count(*), sum(attempts), sum(failures),
       count(*) FILTER (WHERE recovered),
       count(*) FILTER (WHERE recovered AND status = 'succeeded'),
       sum(repairs), sum(replans),
       coalesce(sum(final_score), 0), count(final_score),
       coalesce(sum(duration_ms), 0), count(duration_ms)
FROM task_rollup_rows WHERE id = ANY($1)
GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
ON CONFLICT (day, status, tenant) DO UPDATE SET
    tasks = r.tasks + excluded.tasks,
    attempts = r.attempts + excluded.attempts,
    failures = r.failures + excluded.failures,
    tasks_with_recovery = r.tasks_with_recovery + excluded.tasks_with_recovery,
    succeeded_after_recovery = r.succeeded_after_recovery + excluded.succeeded_after_recovery,
    repairs = r.repairs + excluded.repairs,
    replans = r.replans + excluded.replans,
    score_sum = r.score_sum + excluded.score_sum,
    score_count = r.score_count + excluded.score_count,
    duration_ms_sum = r.duration_ms_sum + excluded.duration_ms_sum,
    duration_ms_count = r.duration_ms_count + excluded.duration_ms_count
