-- name: agent/record_turn
-- One turn of an agent step, under its fenced lock (the step's lease is checked first).
INSERT INTO agent_turns (step_id, task_id, turn, messages, tool_calls, usage, cost, asked_again, ended)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
