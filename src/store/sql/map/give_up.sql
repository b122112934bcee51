-- name: map/give_up
-- move: StepMove::GiveUp
-- An item of a map with `on_item_failure: continue` that failed past its retries and repair.
UPDATE steps SET status = 'skipped', finished_at = now(), updated_at = now()
WHERE id = $1 AND map_step_id IS NOT NULL AND (status IN ('failed')) IS NOT FALSE
