-- A child task ends with its parent (fan-out issue): a worker's sweep cancels the unfinished
-- children of a parent that ended failed or cancelled. This index holds only unfinished
-- children, so the sweep reads what is live, never the history of child tasks.
CREATE INDEX tasks_open_child_idx ON tasks (parent_task_id)
    WHERE parent_task_id IS NOT NULL AND finished_at IS NULL;
