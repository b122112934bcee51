-- Per-task cap on LLM tokens (seeds issue): `limits.max_llm_tokens` / `[llm]
-- max_tokens_per_task`. Past it, decisions take their fallbacks without calling the model.
ALTER TABLE tasks ADD COLUMN max_llm_tokens bigint CHECK (max_llm_tokens IS NULL OR max_llm_tokens >= 0);

COMMENT ON COLUMN tasks.max_llm_tokens IS
    'LLM tokens (llm_calls.total_tokens) the task may spend; NULL: no cap.';
