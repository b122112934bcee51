-- name: queue/turn_ring
UPDATE claim_ring SET slot = $2, turned_at = now()
WHERE slot = $1 AND pg_relation_size(format('claim_queue_%s', $2)::regclass) = 0
