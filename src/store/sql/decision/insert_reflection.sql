-- name: decision/insert_reflection
INSERT INTO reflections (task_id, level, step_id, step_key, plan_version, round,
       root_cause_category, is_recoverable, suggested_action, should_replan,
       replanning_strategy, is_fallback, body, raw)
VALUES ($1, $2, $3, $4, $5, $6, $7->>'root_cause_category', ($7->>'is_recoverable')::boolean,
        $7->'suggested_action', ($7->>'should_replan')::boolean, $7->'replanning_strategy',
        $8, $7, $9)
