-- name: tool/create
INSERT INTO tools (id, name, description, kind, endpoint, timeout_ms, input_schema,
                   output_params, alternatives, tags, max_concurrency,
                   rate_limit_per_sec, rate_limit_burst, output_schema, retry,
                   circuit_breaker, requires_approval, mode, headers, tenant, cancel_url,
                   failure_when)
VALUES ($1, $2, $3, 'http', $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18,
        $19, $20, $21)
ON CONFLICT (id) DO NOTHING
RETURNING *
