-- name: agent/wake
-- move: StepMove::Wake
-- Agent steps ($1) whose turn's calls have all ended: claimable again for their next turn. A
-- stored turn is progress: the workers lost while it ran do not count toward its poisoning.
UPDATE steps SET status = 'ready', run_after = now(), rescue_count = 0, updated_at = now()
WHERE id = ANY($1) AND (status IN ('waiting')) IS NOT FALSE
RETURNING task_id
