-- Recovery that generalises (recovery issue, second part). A step that an open circuit or a
-- rate limit keeps from its tool waits without an attempt; it may wait at most its tool's
-- retry.max_elapsed_secs (or [worker] tool_wait_max_secs) from its first failure or, when it
-- has none, from its first wait, kept here. Null: it never waited.
ALTER TABLE steps ADD COLUMN waiting_since timestamptz;
COMMENT ON COLUMN steps.waiting_since IS
    'The first time an open circuit or a rate limit kept the step from calling its tool (null: never).';

-- Healing upstream: a replan that restarts from the step whose output a later step failed on
-- tells that step why (sent to its tool as `feedback`). Null: a plain run.
ALTER TABLE steps ADD COLUMN feedback jsonb;
COMMENT ON COLUMN steps.feedback IS
    'Why the step runs again: the later step that failed on its output, the parameter and the failure (null: a plain run).';
