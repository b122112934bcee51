-- name: wait/record_event
INSERT INTO inbound_events (key, payload, tenant) VALUES ($1, $2, $3) RETURNING id
