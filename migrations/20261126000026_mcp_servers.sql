-- MCP servers as a tool source (MCP issue): a server's tools are imported as tools of kind
-- 'mcp' with ids `<server id>.<tool name>`, deleted with their server.
CREATE TABLE mcp_servers (
    id            text PRIMARY KEY CHECK (id ~ '^[A-Za-z0-9_-]{1,64}$'),
    endpoint      text NOT NULL,
    -- request headers, values literal or ${secret.NAME} (copied to each imported tool)
    headers       jsonb NOT NULL DEFAULT '{}'::jsonb,
    created_at    timestamptz NOT NULL DEFAULT now(),
    refreshed_at  timestamptz NOT NULL DEFAULT now()
);

ALTER TABLE tools DROP CONSTRAINT tools_kind_check;
ALTER TABLE tools ADD CONSTRAINT tools_kind_check CHECK (kind IN ('builtin', 'http', 'mcp'));
ALTER TABLE tools ADD COLUMN mcp_server text REFERENCES mcp_servers (id) ON DELETE CASCADE;
ALTER TABLE tools ADD CONSTRAINT tools_mcp_has_server CHECK ((kind = 'mcp') = (mcp_server IS NOT NULL));

COMMENT ON TABLE mcp_servers IS 'MCP servers (streamable HTTP) whose tools are imported as tools of kind mcp.';
