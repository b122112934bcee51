-- name: testing/peak_attempts
-- The most attempts (of tenant $1's tasks, or of every task when $1 is null) that ran at once,
-- from their start and end times (an end before a start at one instant).
SELECT coalesce(max(n), 0)::int8 FROM (
    SELECT sum(d) OVER (ORDER BY at, d) AS n FROM (
        SELECT a.started_at AS at, 1 AS d FROM attempts a
        JOIN tasks t ON t.id = a.task_id WHERE $1::text IS NULL OR t.tenant = $1
        UNION ALL SELECT a.finished_at, -1 FROM attempts a
        JOIN tasks t ON t.id = a.task_id WHERE $1::text IS NULL OR t.tenant = $1) e) x
