-- name: agent/turns
-- An agent step's ($1) turns so far, in order: its transcript and where it stands. A step
-- repaired into a new row (same key and plan version) goes on from its old row's turns, so
-- turn numbers, and its calls' keys, stay unique.
SELECT t.turn, t.messages, t.tool_calls, t.usage, t.cost, t.asked_again, t.ended
FROM steps a
JOIN steps o ON o.task_id = a.task_id AND o.plan_version = a.plan_version AND o.step_key = a.step_key
JOIN agent_turns t ON t.step_id = o.id
WHERE a.id = $1
ORDER BY t.turn
