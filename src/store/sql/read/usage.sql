-- name: read/usage
-- A task's usage (LLM tokens, tool calls: attempts of a tool) on its own, and with every
-- descendant (its child tasks, theirs, …).
WITH RECURSIVE tree AS (
    SELECT $1::uuid AS id
    UNION
    SELECT t.id FROM tasks t JOIN tree ON t.parent_task_id = tree.id
), per AS (
    SELECT tree.id,
           coalesce((SELECT sum(l.total_tokens) FROM llm_calls l WHERE l.task_id = tree.id), 0)::int8
               AS llm_tokens,
           (SELECT count(*) FROM attempts a WHERE a.task_id = tree.id AND a.tool <> '')::int8
               AS tool_calls
    FROM tree
)
SELECT coalesce(sum(p.llm_tokens) FILTER (WHERE p.id = $1), 0)::int8 AS llm_tokens,
       coalesce(sum(p.tool_calls) FILTER (WHERE p.id = $1), 0)::int8 AS tool_calls,
       coalesce(sum(p.llm_tokens), 0)::int8 AS total_llm_tokens,
       coalesce(sum(p.tool_calls), 0)::int8 AS total_tool_calls
FROM per p
