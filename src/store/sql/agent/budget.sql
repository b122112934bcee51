-- name: agent/budget
-- The task's ($1) LLM calls and tokens so far, and its caps on them.
SELECT (SELECT count(*) FROM llm_calls l WHERE l.task_id = t.id) AS calls,
       (SELECT coalesce(sum(l.total_tokens), 0) FROM llm_calls l WHERE l.task_id = t.id)::bigint AS tokens,
       t.max_llm_calls, t.max_llm_tokens
FROM tasks t WHERE t.id = $1
