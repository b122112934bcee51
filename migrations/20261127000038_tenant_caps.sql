-- Per-tenant caps (fairness issue, part 3): at most `max_running_tasks` tasks with running
-- steps and `max_running_steps` running steps per tenant, across every worker, over the
-- `[tenants]` defaults (a null column: the default). Kept by the checked claim like a key's
-- max_running: it locks each capped tenant of its candidates (a transaction-scoped advisory
-- lock, tried without waiting) and counts the tenant's running steps with a later snapshot.
-- With no cap anywhere, nothing changes: the plain claim runs as before.
CREATE TABLE tenants (
    tenant            trellis_tenant PRIMARY KEY,
    max_running_tasks integer CHECK (max_running_tasks >= 1),
    max_running_steps integer CHECK (max_running_steps >= 1),
    updated_at        timestamptz NOT NULL DEFAULT now(),
    CHECK (max_running_tasks IS NOT NULL OR max_running_steps IS NOT NULL)
);
COMMENT ON TABLE tenants IS 'Per-tenant caps over [tenants] max_running_tasks / max_running_steps (PUT /api/v1/tenants/{tenant}); kept by the checked claim.';

-- a change of the caps is a change of the claim's registry: workers re-read whether claims
-- must take the checked path
CREATE TRIGGER tenants_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON tenants
    FOR EACH STATEMENT EXECUTE FUNCTION trellis_tools_changed();
