-- name: step/wake
-- move: StepMove::Wake
-- only the attempt the wait belongs to (a newer attempt has a wait of its own)
UPDATE steps SET status = 'ready', run_after = now(), updated_at = now()
WHERE id = $1 AND attempts + 1 = $2 AND (status IN ('waiting')) IS NOT FALSE
