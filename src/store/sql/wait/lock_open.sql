-- name: wait/lock_open
-- from: WaitMove::Resolve
-- an open wait, locked (its task is locked first by the caller)
SELECT * FROM waits WHERE id = $1 AND status IN ('open') FOR UPDATE
