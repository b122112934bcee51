-- name: mcp/upsert_server
INSERT INTO mcp_servers (id, endpoint, headers) VALUES ($1, $2, $3)
ON CONFLICT (id) DO UPDATE SET endpoint = excluded.endpoint, headers = excluded.headers,
                               refreshed_at = now()
RETURNING id, endpoint, headers, created_at, refreshed_at
