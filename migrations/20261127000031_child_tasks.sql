-- Child tasks (the fan-out issue): a step whose tool is the built-in `task` starts a task of
-- its own and, with `wait` (the default), waits for it: the step parks on a wait of kind
-- `child` (no slot, no lease), and the wait is resolved when the child ends (the workers' wait
-- sweep finds open child waits whose child has ended, through a partial index that is empty
-- when no child runs). Cancelling a task cancels its unfinished descendants.
ALTER TABLE tasks
    ADD COLUMN parent_task_id uuid,
    ADD COLUMN parent_step_id uuid;
CREATE INDEX tasks_parent_idx ON tasks (parent_task_id) WHERE parent_task_id IS NOT NULL;

ALTER TABLE waits DROP CONSTRAINT waits_kind_check;
ALTER TABLE waits ADD CONSTRAINT waits_kind_check
    CHECK (kind IN ('approval', 'event', 'callback', 'sleep', 'child'));
ALTER TABLE waits ADD COLUMN child_task_id uuid;
CREATE INDEX waits_open_child_idx ON waits (child_task_id) WHERE status = 'open' AND kind = 'child';

INSERT INTO tools (id, name, description, kind, timeout_ms, input_schema) VALUES
  ('task', 'task', 'Starts a child task and (with "wait", the default) waits without a worker until it ends: {"template": id, "input"} or {"plan", "input"} (the child''s context), "description", "wait"; output {"task_id", "outputs"} (the child''s), or {"task_id"} without waiting. A child that fails or is cancelled fails the step (child_task_failed).', 'builtin', 30000,
   '{"type":"object","properties":{"template":{"type":"string","minLength":1},"plan":{"type":"object"},"input":{"type":"object"},"description":{"type":"string"},"wait":{"type":"boolean"}}}');
