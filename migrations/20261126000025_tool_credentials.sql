-- Tool credentials (MCP issue): secrets sealed with AES-256-GCM under `[secrets] key` (the
-- store never sees a value), and tool headers whose values may name them (`${secret.NAME}`),
-- resolved by the worker at call time.
CREATE TABLE secrets (
    name        text PRIMARY KEY CHECK (name ~ '^[A-Za-z0-9_.-]{1,128}$'),
    -- nonce ‖ ciphertext ‖ tag
    sealed      bytea NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now()
);

ALTER TABLE tools ADD COLUMN headers jsonb NOT NULL DEFAULT '{}'::jsonb;

COMMENT ON TABLE secrets IS 'Tool credentials, sealed (AES-256-GCM, [secrets] key): write-only through the API, opened by workers at call time.';
