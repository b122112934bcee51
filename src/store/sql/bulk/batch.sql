-- name: bulk/batch
-- The action's next batch of tasks, in id order after the keyset cursor.
SELECT task_id FROM bulk_action_tasks
WHERE bulk_action_id = $1 AND ($2::uuid IS NULL OR task_id > $2)
ORDER BY task_id LIMIT $3
