-- name: step/heartbeat
-- Renew the worker's leases; answers how many step leases it renewed, and which of those steps
-- belong to a cancelled task (their calls are aborted: the cancel reaches the worker within a
-- heartbeat). The join reads the renewed steps' tasks by key.
-- A row another transaction is writing is passed over (SKIP LOCKED), never waited for: that is
-- the completion of this worker's own step, or a move that ends its lease, and the next beat
-- renews it if it is still held. Waiting, the beat locked its rows in another order than the
-- completion's batch, and the two deadlocked.
WITH ls AS (
    SELECT steps.id FROM steps
    JOIN unnest($3::uuid[], $4::bigint[]) AS f(id, token) ON steps.id = f.id
    WHERE steps.lease_token = f.token AND steps.lease_owner = $1
    FOR NO KEY UPDATE OF steps SKIP LOCKED),
s AS (
    UPDATE steps SET lease_expires_at = now() + make_interval(secs => $2)
    FROM ls WHERE steps.id = ls.id
    RETURNING steps.id, steps.task_id),
ld AS (
    SELECT decisions.id FROM decisions
    JOIN unnest($5::uuid[], $6::bigint[]) AS f(id, token) ON decisions.id = f.id
    WHERE decisions.lease_token = f.token AND decisions.lease_owner = $1
    FOR NO KEY UPDATE OF decisions SKIP LOCKED),
d AS (
    UPDATE decisions SET lease_expires_at = now() + make_interval(secs => $2)
    FROM ld WHERE decisions.id = ld.id
    RETURNING 1),
w AS (UPDATE workers SET last_heartbeat = now(),
          in_flight = cardinality($3::uuid[]) + cardinality($5::uuid[])
      WHERE id = $1)
SELECT count(*) AS renewed,
       coalesce(array_agg(s.id) FILTER (WHERE t.status = 'cancelled'), '{}') AS cancelled
FROM s JOIN tasks t ON t.id = s.task_id
