-- name: wait/list
-- the inbox: waits by status and kind (or of one task), newest first
SELECT * FROM waits
WHERE ($1::text IS NULL OR status = $1) AND ($2::text IS NULL OR kind = $2)
  AND ($3::uuid IS NULL OR task_id = $3) AND ($5::text IS NULL OR tenant = $5)
ORDER BY created_at DESC, id DESC
LIMIT $4
