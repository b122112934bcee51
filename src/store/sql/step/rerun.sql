-- name: step/rerun
-- move: StepMove::Rerun
UPDATE steps SET status = 'ready', param_overrides = param_overrides || coalesce($2, '{}'::jsonb),
       tool_override = coalesce($3, tool_override), finished_at = NULL, updated_at = now(),
       run_after = now() + make_interval(secs => $4 / 1000.0)
WHERE id = $1 AND (status IN ('failed')) IS NOT FALSE
