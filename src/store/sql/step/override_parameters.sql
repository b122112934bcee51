-- name: step/override_parameters
UPDATE steps SET param_overrides = param_overrides || $2,
       tool_override = coalesce($3, tool_override), updated_at = now()
WHERE id = $1
