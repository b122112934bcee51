-- name: read/queue_by_key
-- Ready and running steps per concurrency key ('' for tasks without one): the $1 keys with the
-- most, then the rest summed as 'others'. Ready steps are read through running tasks (never
-- the finished history), running ones through running_steps. $2: one tenant's (none: all).
WITH ready AS (
    SELECT coalesce(t.concurrency_key, '') AS key, count(*) AS n
    FROM tasks t JOIN steps s ON s.task_id = t.id
    WHERE t.status = 'running' AND s.status = 'ready' AND ($2::text IS NULL OR t.tenant = $2)
    GROUP BY 1
), running AS (
    SELECT coalesce(t.concurrency_key, '') AS key, count(*) AS n
    FROM running_steps r JOIN tasks t ON t.id = r.task_id
    WHERE $2::text IS NULL OR t.tenant = $2
    GROUP BY 1
), k AS (
    SELECT coalesce(a.key, b.key) AS key, coalesce(a.n, 0) AS ready, coalesce(b.n, 0) AS running
    FROM ready a FULL JOIN running b ON a.key = b.key
), ranked AS (
    SELECT k.*, row_number() OVER (ORDER BY k.ready + k.running DESC, k.key) AS nth FROM k
)
SELECT key, ready::int8, running::int8
FROM (SELECT key, ready, running, nth FROM ranked WHERE nth <= $1
      UNION ALL
      SELECT 'others', sum(ready), sum(running), $1 + 1 FROM ranked
      WHERE nth > $1 HAVING count(*) > 0) x
ORDER BY nth
