-- name: bulk/lock_next
-- The oldest running bulk action no other worker is applying (its row lock is the batch's:
-- an abort waits for the batch in progress).
SELECT id, action, from_step, after FROM bulk_actions
WHERE state = 'running' ORDER BY created_at LIMIT 1 FOR UPDATE SKIP LOCKED
