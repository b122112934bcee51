-- name: mcp/delete_server
DELETE FROM mcp_servers WHERE id = $1
