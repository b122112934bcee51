-- name: tenant/put
INSERT INTO tenants (tenant, max_running_tasks, max_running_steps) VALUES ($1, $2, $3)
ON CONFLICT (tenant) DO UPDATE SET max_running_tasks = excluded.max_running_tasks,
                                   max_running_steps = excluded.max_running_steps,
                                   updated_at = now()
RETURNING tenant::text, max_running_tasks, max_running_steps, updated_at
