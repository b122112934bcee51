-- Security and hardening (issue 11).
--
-- API keys: only a SHA-256 digest of each key is stored (keys are 256-bit random values, so a
-- fast digest is enough; a slow password hash would buy nothing and cost a lot per request).
-- A revoked key keeps its row, for the audit trail; every API process looks keys up per
-- request, so a revocation holds at once everywhere.
CREATE TABLE api_keys (
    id          uuid PRIMARY KEY,
    name        text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
    role        text NOT NULL CHECK (role IN ('admin', 'operator', 'reader')),
    key_hash    bytea NOT NULL UNIQUE,
    -- the first characters of the key, to recognise it in a list
    key_prefix  text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    revoked_at  timestamptz
);

COMMENT ON TABLE api_keys IS 'API keys (SHA-256 digests, never the keys); revoked keys stay for the audit trail.';
