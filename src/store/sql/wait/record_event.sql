-- name: wait/record_event
INSERT INTO inbound_events (key, payload) VALUES ($1, $2) RETURNING id
