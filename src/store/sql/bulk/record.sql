-- name: bulk/record
-- A batch's outcomes, each task's, and the action's progress (done when the batch was the
-- last), in the batch's transaction.
WITH o AS (
    UPDATE bulk_action_tasks b SET outcome = f.outcome, error = f.error
    FROM unnest($2::uuid[], $3::text[], $4::text[]) AS f(task_id, outcome, error)
    WHERE b.bulk_action_id = $1 AND b.task_id = f.task_id
    RETURNING 1
)
UPDATE bulk_actions
SET after = coalesce($5, after), done = done + $6, failed = failed + $7, updated_at = now(),
    state = CASE WHEN $8 THEN 'done' ELSE state END,
    finished_at = CASE WHEN $8 THEN now() ELSE finished_at END
WHERE id = $1
