-- name: map/repaired_item
-- A repaired item's new row ($2: its plan version) keeps the old row's ($1) place in its map and
-- counts the repair on the item's own budget.
UPDATE steps n
SET map_step_id = o.map_step_id, item_index = o.item_index, item = o.item, optional = o.optional,
    repair_count = o.repair_count + 1
FROM steps o
WHERE o.id = $1 AND n.task_id = o.task_id AND n.plan_version = $2 AND n.step_key = o.step_key
  AND n.status <> 'superseded' AND n.id <> o.id
