-- name: task/succeed_at_once
-- move: TaskMove::SucceedAtOnce
UPDATE tasks t SET status = 'succeeded', updated_at = now(), state_version = t.state_version + 1,
       finished_at = now(), final_score = s.score
FROM unnest($1::uuid[], $2::float8[]) AS s(id, score)
WHERE t.id = s.id AND (t.status IN ('running')) IS NOT FALSE
