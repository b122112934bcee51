-- name: circuit/ensure
INSERT INTO tool_circuits (tool_id) SELECT id FROM tools WHERE id = $1
ON CONFLICT (tool_id) DO NOTHING
