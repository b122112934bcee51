-- name: circuit/write
UPDATE tool_circuits SET consecutive_failures = $2, open_until = $3, probe_until = $4,
       held_until = $5, pace_ms = $6, next_slot = $7,
       last_release = $8, updated_at = now()
WHERE tool_id = $1
