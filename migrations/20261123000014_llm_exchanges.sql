-- [debug] save_llm_exchanges (seeds issue, seed 002's debug log): the prompt messages and the
-- raw answer of each LLM call, kept for audit when the setting is on (NULL otherwise).
ALTER TABLE llm_calls ADD COLUMN exchange jsonb;

COMMENT ON COLUMN llm_calls.exchange IS
    '{"messages": [{"role", "content"}], "answer": raw text or null}; credential values of the task''s metadata and context redacted. NULL unless [debug] save_llm_exchanges.';
