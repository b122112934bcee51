-- name: mcp/upsert_tools
-- the server's tools as listed now: new ones inserted, changed ones updated (their limits,
-- retry policy and alternatives, set through the registry, are kept)
-- (the server's tenant's tools)
INSERT INTO tools (id, name, description, kind, endpoint, input_schema, output_schema, headers,
                   mcp_server, tenant)
SELECT $1 || '.' || t.name, t.name, t.description, 'mcp', $2, t.input_schema, t.output_schema, $3, $1,
       (SELECT s.tenant FROM mcp_servers s WHERE s.id = $1)
FROM unnest($4::text[], $5::text[], $6::jsonb[], $7::jsonb[])
     AS t(name, description, input_schema, output_schema)
ON CONFLICT (id) DO UPDATE SET description = excluded.description, endpoint = excluded.endpoint,
    input_schema = excluded.input_schema, output_schema = excluded.output_schema,
    headers = excluded.headers, updated_at = now()
WHERE tools.mcp_server = $1
