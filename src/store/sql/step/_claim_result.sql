-- part: step/_claim_result (of step/claim_plain and step/claim_checked)
)
SELECT c.id, c.task_id, c.plan_version, c.step_key, c.tool, c.parameters, c.param_overrides,
       c.actions, c.attempt, c.lease_token, c.started_at, c.run_after AS due_at, b.metadata,
       b.context, c.feedback, c.map, c.item, c.item_index,
       CASE WHEN c.map_step_id IS NOT NULL THEN
       (SELECT coalesce(m.map ->> 'as', 'item') FROM steps m WHERE m.id = c.map_step_id) END AS item_name,
       CASE WHEN cardinality(c.dependencies) = 0 THEN '{}'::jsonb ELSE
       (SELECT coalesce(jsonb_object_agg(d.step_key, coalesce(d.output, 'null'::jsonb)), '{}'::jsonb)
        FROM steps d
        WHERE d.task_id = c.task_id AND d.plan_version = c.plan_version
          AND d.step_key = ANY(c.dependencies) AND d.status IN ('succeeded', 'skipped')) END AS outputs,
       (SELECT version FROM tool_registry) AS tools_version
FROM claimed c JOIN bump b ON b.id = c.task_id JOIN picked p ON p.id = c.id
ORDER BY p.ord
