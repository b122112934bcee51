-- name: task/count_descendant
-- One more descendant of the root $1, unless it has $2 already (no row returned). The row's
-- lock, held to the commit, orders the children of one tree.
INSERT INTO task_trees AS t (root_task_id, descendants) VALUES ($1, 1)
ON CONFLICT (root_task_id) DO UPDATE SET descendants = t.descendants + 1
WHERE t.descendants < $2
RETURNING descendants
