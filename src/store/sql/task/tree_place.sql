-- name: task/tree_place
-- Where a child of task $1 would stand: its tree's root and $1's depth (0: a root), walking up
-- the parents at most $2 levels (a longer chain reads as depth $2: too deep for a child
-- whatever its root).
WITH RECURSIVE up(id, parent, depth) AS (
    SELECT id, parent_task_id, 0 FROM tasks WHERE id = $1
    UNION ALL
    SELECT t.id, t.parent_task_id, up.depth + 1
    FROM up JOIN tasks t ON t.id = up.parent
    WHERE up.depth < $2
)
SELECT (array_agg(id ORDER BY depth DESC))[1] AS root, max(depth) AS depth FROM up
