-- name: step/waited
-- step/waiting_since without keeping it: how long the step has been kept from its tool (ms).
SELECT (extract(epoch FROM now() - coalesce(waiting_since, now() - make_interval(secs => $2 / 1000.0))) * 1000)::bigint,
       now()
FROM steps WHERE id = $1
