-- name: testing/age_finished
UPDATE tasks SET finished_at = finished_at - make_interval(secs => $1),
updated_at = updated_at - make_interval(secs => $1)
