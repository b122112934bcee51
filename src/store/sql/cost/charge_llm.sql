-- name: cost/charge_llm
-- A decision's LLM calls (each priced by the llm_calls_cost trigger from the price valid now),
-- added to the task's cost when any was priced (no price: the task's row is not touched).
-- Answers each call's model and cost, and the task's cost against its cap after.
WITH ins AS (
    INSERT INTO llm_calls (task_id, decision_id, name, model, ok, error, requests,
           prompt_tokens, completion_tokens, total_tokens, latency_ms, exchange, cached_tokens)
    SELECT $1, $2, * FROM unnest($3::text[], $4::text[], $5::boolean[], $6::text[],
           $7::bigint[], $8::bigint[], $9::bigint[], $10::bigint[], $11::bigint[],
           $12::jsonb[], $13::bigint[])
    RETURNING model, cost
), spent AS (
    SELECT sum(cost)::float8 AS c FROM ins
), charged AS (
    UPDATE tasks t SET cost = t.cost + spent.c
    FROM spent WHERE t.id = $1 AND spent.c > 0
    RETURNING t.cost, t.max_cost
)
SELECT ins.model, ins.cost::float8 AS cost, ch.cost AS task_cost, ch.max_cost
FROM ins LEFT JOIN charged ch ON true
