-- name: step/waiting_since
-- How long a step has been kept from its tool by a circuit or a rate limit (ms), counting from
-- the first time (kept on the row: a step can wait many times).
UPDATE steps SET waiting_since = coalesce(waiting_since, now())
WHERE id = $1
RETURNING (extract(epoch FROM now() - waiting_since) * 1000)::bigint
