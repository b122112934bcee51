-- name: mcp/drop_unlisted
-- tools the server no longer lists
DELETE FROM tools WHERE mcp_server = $1 AND NOT (name = ANY($2))
