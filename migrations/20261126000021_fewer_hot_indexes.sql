-- Hot path, third step: an index every attempt wrote and no statement needs (measured with
-- pg_waldump over a 20,000-step run: 88 bytes of WAL per step). attempts_task_step_idx
-- (task_id, step_key, id) serves every read by task; a task's attempts are few, and sorted
-- after.
DROP INDEX attempts_task_idx;
