-- name: decision/record_llm_call
INSERT INTO llm_calls (task_id, decision_id, name, model, ok, error, requests,
       prompt_tokens, completion_tokens, total_tokens, latency_ms, exchange)
SELECT $1, $2, * FROM unnest($3::text[], $4::text[], $5::boolean[], $6::text[],
       $7::bigint[], $8::bigint[], $9::bigint[], $10::bigint[], $11::bigint[],
       $12::jsonb[])
