-- name: step/tasks_of_finished
-- the tasks whose plan a completion batch finished (an inline evaluation reads them)
SELECT * FROM tasks WHERE id = ANY($1)
