-- name: event/append
WITH ev AS (
    SELECT e.task_id, e.kind, e.payload, e.ord,
           row_number() OVER (PARTITION BY e.task_id ORDER BY e.ord) AS rn
    FROM unnest($1::uuid[], $2::text[], $3::jsonb[]) WITH ORDINALITY AS e(task_id, kind, payload, ord)
), counts AS (
    SELECT task_id, count(*) AS n FROM ev GROUP BY task_id
), bump AS (
    UPDATE tasks t SET event_seq = t.event_seq + counts.n
    FROM counts WHERE t.id = counts.task_id
    RETURNING t.id, t.event_seq AS last_seq, counts.n
)
INSERT INTO events (task_id, seq, kind, payload)
SELECT ev.task_id, bump.last_seq - bump.n + ev.rn, ev.kind, ev.payload
FROM ev JOIN bump ON bump.id = ev.task_id
