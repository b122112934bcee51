-- name: bulk/abort
-- Stop a running action (waiting for the batch in progress, which holds the row).
UPDATE bulk_actions SET state = 'aborted', updated_at = now(), finished_at = now()
WHERE id = $1 AND state = 'running' AND ($2::text IS NULL OR tenant = $2)
RETURNING id
