-- name: queue/ring_state
SELECT slot, extract(epoch FROM now() - turned_at)::float8,
       ARRAY(SELECT pg_relation_size(format('claim_queue_%s', s)::regclass)
             FROM generate_series(0, $1 - 1) AS s ORDER BY s)
FROM claim_ring
