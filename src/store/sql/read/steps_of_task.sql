-- name: read/steps_of_task
-- Every step row of a task, every version, with an expanded map step's progress; in plan order,
-- a map's items after it in item order.
SELECT s.*, m.total AS map_total, m.ended AS map_ended, m.given_up AS map_given_up
FROM steps s LEFT JOIN step_maps m ON m.step_id = s.id
WHERE s.task_id = $1
ORDER BY s.plan_version, s.position, s.item_index NULLS FIRST
