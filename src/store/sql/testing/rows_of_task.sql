-- name: testing/rows_of_task
SELECT (SELECT count(*) FROM tasks WHERE id = $1) + (SELECT count(*) FROM plans WHERE task_id = $1)
+ (SELECT count(*) FROM steps WHERE task_id = $1) + (SELECT count(*) FROM attempts WHERE task_id = $1)
+ (SELECT count(*) FROM events WHERE task_id = $1) + (SELECT count(*) FROM decisions WHERE task_id = $1)
+ (SELECT count(*) FROM reflections WHERE task_id = $1)
+ (SELECT count(*) FROM evaluations WHERE task_id = $1)
+ (SELECT count(*) FROM recoveries WHERE task_id = $1)
+ (SELECT count(*) FROM llm_calls WHERE task_id = $1)
