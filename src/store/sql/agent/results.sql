-- name: agent/results
-- How the agent step's ($1) calls named by key ($2) ended: their live rows in its plan version
-- (a repaired call's new row, not the one it replaced).
SELECT s.step_key, s.status, s.output, s.error
FROM steps a
JOIN steps s ON s.task_id = a.task_id AND s.plan_version = a.plan_version
            AND s.step_key = ANY($2) AND s.live
WHERE a.id = $1
