-- name: step/heartbeat
-- Renew the worker's leases; answers how many step leases it renewed, and which of those steps
-- belong to a cancelled task (their calls are aborted: the cancel reaches the worker within a
-- heartbeat). The join reads the renewed steps' tasks by key.
WITH s AS (
    UPDATE steps SET lease_expires_at = now() + make_interval(secs => $2)
    FROM unnest($3::uuid[], $4::bigint[]) AS f(id, token)
    WHERE steps.id = f.id AND steps.lease_token = f.token AND steps.lease_owner = $1
    RETURNING steps.id, steps.task_id),
d AS (
    UPDATE decisions SET lease_expires_at = now() + make_interval(secs => $2)
    FROM unnest($5::uuid[], $6::bigint[]) AS f(id, token)
    WHERE decisions.id = f.id AND decisions.lease_token = f.token
      AND decisions.lease_owner = $1
    RETURNING 1),
w AS (UPDATE workers SET last_heartbeat = now(),
          in_flight = cardinality($3::uuid[]) + cardinality($5::uuid[])
      WHERE id = $1)
SELECT count(*) AS renewed,
       coalesce(array_agg(s.id) FILTER (WHERE t.status = 'cancelled'), '{}') AS cancelled
FROM s JOIN tasks t ON t.id = s.task_id
