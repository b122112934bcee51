-- name: retention/rollup_costs
-- The deleted tasks' costs (by day, kind, model or tool, template and tenant), and what their
-- recovery actions cost (by day, tier, action and tenant).
WITH c AS (
    INSERT INTO cost_rollups AS r (day, kind, name, template, tenant, items, cost)
    SELECT c.day, c.kind, c.name, trellis_task_template(c.task_id), t.tenant, count(*), sum(c.cost)
    FROM cost_rows c JOIN tasks t ON t.id = c.task_id
    WHERE c.task_id = ANY($1)
    GROUP BY 1, 2, 3, 4, 5 ORDER BY 1, 2, 3, 4, 5
    ON CONFLICT (day, kind, name, template, tenant) DO UPDATE SET
        items = r.items + excluded.items, cost = r.cost + excluded.cost
    RETURNING 1
)
INSERT INTO recovery_cost_rollups AS r (day, tier, action, tenant, actions, llm_cost, tool_cost,
                                        saved_steps, tasks_saved)
SELECT date_trunc('day', failed_at)::date, tier, action, tenant, count(*), sum(llm_cost),
       sum(tool_cost), count(*) FILTER (WHERE saved),
       count(DISTINCT task_id) FILTER (WHERE saved AND task_succeeded)
FROM recovery_costs WHERE task_id = ANY($1)
GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4
ON CONFLICT (day, tier, action, tenant) DO UPDATE SET
    actions = r.actions + excluded.actions, llm_cost = r.llm_cost + excluded.llm_cost,
    tool_cost = r.tool_cost + excluded.tool_cost, saved_steps = r.saved_steps + excluded.saved_steps,
    tasks_saved = r.tasks_saved + excluded.tasks_saved
