-- name: step/waiting_since
-- How long a step has been kept from its tool by a circuit or a rate limit (ms), and now(): from
-- its first wait or its streak's first failure ($2 ms ago, 0 when none), whichever came first,
-- kept on the row (a step can wait many times; a person's resume or rerun restarts it).
UPDATE steps SET waiting_since = coalesce(waiting_since, now() - make_interval(secs => $2 / 1000.0))
WHERE id = $1
RETURNING (extract(epoch FROM now() - waiting_since) * 1000)::bigint, now()
