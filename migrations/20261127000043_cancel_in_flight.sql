-- Cancelling a call in flight (operations issue, part 4): a cancelled task's running steps are
-- told at their worker's next heartbeat (`step/heartbeat` answers the held steps whose task is
-- cancelled); the worker aborts the call, records the attempt as failed with category
-- `cancelled`, and, when the tool declares one, POSTs the cancellation to its `cancel_url`.
ALTER TABLE tools ADD COLUMN cancel_url text CHECK (cancel_url ~ '^https?://');
COMMENT ON COLUMN tools.cancel_url IS
    'POSTed {tool, task_id, step_id, attempt} when a call in flight is cancelled (null: none)';
