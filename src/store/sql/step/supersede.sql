-- name: step/supersede
-- move: StepMove::Supersede
UPDATE steps SET status = 'superseded', finished_at = now(), updated_at = now()
WHERE id = $1 AND (status IN ('blocked', 'ready', 'failed', 'waiting')) IS NOT FALSE
