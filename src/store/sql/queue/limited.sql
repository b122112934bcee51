-- name: queue/limited
-- the registry's version, and whether claims must take the checked path: a limited tool, a
-- key pattern with a max_running, or a tenant with caps of its own
SELECT version, EXISTS (SELECT 1 FROM tool_buckets)
       OR EXISTS (SELECT 1 FROM key_limits WHERE max_running IS NOT NULL)
       OR EXISTS (SELECT 1 FROM tenants)
FROM tool_registry
