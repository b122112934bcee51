-- name: mcp/upsert_server
-- (a refresh keeps the server's tenant)
INSERT INTO mcp_servers (id, endpoint, headers, tenant) VALUES ($1, $2, $3, $4)
ON CONFLICT (id) DO UPDATE SET endpoint = excluded.endpoint, headers = excluded.headers,
                               refreshed_at = now()
RETURNING id, endpoint, headers, created_at, refreshed_at, tenant
