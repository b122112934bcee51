-- name: read/recent_task_counts
-- Tasks submitted in the last $1 minutes by status, each count stopping at $2 + 1: a branch per
-- status with the status written in, so each is planned with its own selectivity; the ORDER BY
-- keeps every branch on the status index (a LIMIT over a sequential scan would read the whole
-- history when the recent rows are at its end). Every TaskStatus has its branch (a unit test).
-- $3: one tenant's (none: every tenant's).
SELECT 'pending' AS status, count(*) AS n FROM (
    SELECT 1 FROM tasks WHERE status = 'pending' AND created_at >= now() - make_interval(mins => $1)
      AND ($3::text IS NULL OR tenant = $3)
    ORDER BY created_at DESC LIMIT $2 + 1) AS capped
UNION ALL
SELECT 'planning' AS status, count(*) AS n FROM (
    SELECT 1 FROM tasks WHERE status = 'planning' AND created_at >= now() - make_interval(mins => $1)
      AND ($3::text IS NULL OR tenant = $3)
    ORDER BY created_at DESC LIMIT $2 + 1) AS capped
UNION ALL
SELECT 'running' AS status, count(*) AS n FROM (
    SELECT 1 FROM tasks WHERE status = 'running' AND created_at >= now() - make_interval(mins => $1)
      AND ($3::text IS NULL OR tenant = $3)
    ORDER BY created_at DESC LIMIT $2 + 1) AS capped
UNION ALL
SELECT 'reflecting' AS status, count(*) AS n FROM (
    SELECT 1 FROM tasks WHERE status = 'reflecting' AND created_at >= now() - make_interval(mins => $1)
      AND ($3::text IS NULL OR tenant = $3)
    ORDER BY created_at DESC LIMIT $2 + 1) AS capped
UNION ALL
SELECT 'replanning' AS status, count(*) AS n FROM (
    SELECT 1 FROM tasks WHERE status = 'replanning' AND created_at >= now() - make_interval(mins => $1)
      AND ($3::text IS NULL OR tenant = $3)
    ORDER BY created_at DESC LIMIT $2 + 1) AS capped
UNION ALL
SELECT 'evaluating' AS status, count(*) AS n FROM (
    SELECT 1 FROM tasks WHERE status = 'evaluating' AND created_at >= now() - make_interval(mins => $1)
      AND ($3::text IS NULL OR tenant = $3)
    ORDER BY created_at DESC LIMIT $2 + 1) AS capped
UNION ALL
SELECT 'succeeded' AS status, count(*) AS n FROM (
    SELECT 1 FROM tasks WHERE status = 'succeeded' AND created_at >= now() - make_interval(mins => $1)
      AND ($3::text IS NULL OR tenant = $3)
    ORDER BY created_at DESC LIMIT $2 + 1) AS capped
UNION ALL
SELECT 'failed' AS status, count(*) AS n FROM (
    SELECT 1 FROM tasks WHERE status = 'failed' AND created_at >= now() - make_interval(mins => $1)
      AND ($3::text IS NULL OR tenant = $3)
    ORDER BY created_at DESC LIMIT $2 + 1) AS capped
UNION ALL
SELECT 'needs_intervention' AS status, count(*) AS n FROM (
    SELECT 1 FROM tasks WHERE status = 'needs_intervention' AND created_at >= now() - make_interval(mins => $1)
      AND ($3::text IS NULL OR tenant = $3)
    ORDER BY created_at DESC LIMIT $2 + 1) AS capped
UNION ALL
SELECT 'cancelled' AS status, count(*) AS n FROM (
    SELECT 1 FROM tasks WHERE status = 'cancelled' AND created_at >= now() - make_interval(mins => $1)
      AND ($3::text IS NULL OR tenant = $3)
    ORDER BY created_at DESC LIMIT $2 + 1) AS capped
