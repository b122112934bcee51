-- name: testing/event_log_disagreements
-- Tasks whose events (stored and read from steps and attempts) are not exactly the numbers
-- 1..event_seq, each once, each a kind the domain knows.
SELECT t.id
FROM tasks t
LEFT JOIN LATERAL (
    SELECT count(*) AS n, count(DISTINCT e.seq) AS distinct_n,
           count(*) FILTER (WHERE e.seq < 1 OR e.seq > t.event_seq) AS outside
    FROM events e WHERE e.task_id = t.id
) e ON true
WHERE e.n <> t.event_seq OR e.distinct_n <> t.event_seq OR e.outside > 0
ORDER BY t.id
