-- Recovery that generalises (recovery issue, second part): a step that an open circuit or a
-- rate limit keeps from its tool waits without an attempt; it may wait at most its tool's
-- retry.max_elapsed_secs (or [worker] tool_wait_max_secs) from its first failure or, when it
-- has none, from its first wait, kept here. Null: it never waited.
ALTER TABLE steps ADD COLUMN waiting_since timestamptz;
COMMENT ON COLUMN steps.waiting_since IS
    'The first time an open circuit or a rate limit kept the step from calling its tool (null: never).';
