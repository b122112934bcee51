-- name: agent/read_turns
-- The turns of the task's ($1) step $2 in the latest plan version that has it, each call with
-- the status of its step (`refused`: the call did not run).
WITH a AS (
    SELECT s.task_id, s.plan_version FROM steps s
    WHERE s.task_id = $1 AND s.step_key = $2
    ORDER BY s.plan_version DESC LIMIT 1
)
SELECT t.turn, t.messages, t.usage, t.cost,
       coalesce((SELECT jsonb_agg(c.call || jsonb_build_object('status',
                        CASE WHEN c.call ->> 'refused' IS NOT NULL THEN 'refused'
                             ELSE coalesce(cs.status, 'superseded') END) ORDER BY c.n)
                 FROM jsonb_array_elements(t.tool_calls) WITH ORDINALITY AS c(call, n)
                 LEFT JOIN steps cs ON cs.task_id = a.task_id AND cs.plan_version = a.plan_version
                                   AND cs.step_key = c.call ->> 'step_id' AND cs.live),
                '[]'::jsonb) AS tool_calls
FROM a
JOIN steps r ON r.task_id = a.task_id AND r.plan_version = a.plan_version AND r.step_key = $2
JOIN agent_turns t ON t.step_id = r.id
ORDER BY t.turn
