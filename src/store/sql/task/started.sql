-- name: task/started
-- whether anything of a task has started: a step claimed or finished, or its plan decision
-- taken up
SELECT EXISTS (SELECT 1 FROM steps WHERE task_id = $1
               AND (started_at IS NOT NULL OR attempts > 0 OR status NOT IN ('ready', 'blocked')))
    OR EXISTS (SELECT 1 FROM decisions WHERE task_id = $1 AND status <> 'pending')
