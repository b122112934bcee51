-- name: schedule/delete
DELETE FROM schedules WHERE id = $1
