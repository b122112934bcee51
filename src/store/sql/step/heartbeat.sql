-- name: step/heartbeat
WITH s AS (
    UPDATE steps SET lease_expires_at = now() + make_interval(secs => $2)
    FROM unnest($3::uuid[], $4::bigint[]) AS f(id, token)
    WHERE steps.id = f.id AND steps.lease_token = f.token AND steps.lease_owner = $1
    RETURNING 1),
d AS (
    UPDATE decisions SET lease_expires_at = now() + make_interval(secs => $2)
    FROM unnest($5::uuid[], $6::bigint[]) AS f(id, token)
    WHERE decisions.id = f.id AND decisions.lease_token = f.token
      AND decisions.lease_owner = $1
    RETURNING 1),
w AS (UPDATE workers SET last_heartbeat = now(),
          in_flight = cardinality($3::uuid[]) + cardinality($5::uuid[])
      WHERE id = $1)
SELECT count(*) FROM s
