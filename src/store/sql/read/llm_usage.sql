-- name: read/llm_usage
SELECT count(*) AS calls, count(*) FILTER (WHERE NOT ok) AS failed_calls,
       coalesce(sum(requests), 0)::bigint AS requests,
       coalesce(sum(prompt_tokens), 0)::bigint AS prompt_tokens,
       coalesce(sum(completion_tokens), 0)::bigint AS completion_tokens,
       coalesce(sum(total_tokens), 0)::bigint AS total_tokens
FROM llm_calls WHERE task_id = $1
