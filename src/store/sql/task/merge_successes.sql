-- name: task/merge_successes
UPDATE tasks t SET consecutive_failures = 0, runtime_metadata = t.runtime_metadata || m.params,
       updated_at = now()
FROM unnest($1::uuid[], $2::jsonb[]) AS m(id, params)
WHERE t.id = m.id
