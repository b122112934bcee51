-- Task deadlines (seeds issue): `limits.task_timeout_secs` / `[orchestrator] task_timeout_secs`.
--
-- `deadline_at` is set at submit from the database clock. Claims skip a task past it; the
-- workers' maintenance fails such a task with `deadline_exceeded`, fencing its running steps.
ALTER TABLE tasks ADD COLUMN deadline_at timestamptz;

COMMENT ON COLUMN tasks.deadline_at IS
    'When the task fails with deadline_exceeded unless it ended before (NULL: no deadline).';

-- the sweep reads only unfinished tasks that have a deadline
CREATE INDEX tasks_deadline_idx ON tasks (deadline_at)
    WHERE deadline_at IS NOT NULL
      AND status IN ('pending', 'planning', 'running', 'reflecting', 'replanning', 'evaluating');
