-- The agent step (agent issue): the built-in `agent` runs a model that calls tools in a loop.
-- Each turn is one LLM call; its tool calls become item steps of the agent step (`<key>.<turn>.<n>`,
-- `map_step_id` the agent step), on the normal claim path with their own recovery, while the
-- agent step waits (no slot, no lease) as a map step waits for its items. The item that ends a
-- turn's calls wakes the agent step (`waiting → ready`, `step_maps.wakes`) instead of joining
-- it; its next claim sends their results as `tool` messages.
INSERT INTO tools (id, name, description, kind, timeout_ms, input_schema) VALUES
  ('agent', 'agent', 'An LLM that calls tools in a loop until it answers: {"instructions", "input", "tools" (tool ids), "max_turns" (10), "max_cost", "output_schema", "parallel_tool_calls" (true), "approval_for" (tool ids)}; each call is a step <key>.<turn>.<n>; output: the final answer (parsed JSON with output_schema).', 'builtin', 600000,
   '{"type":"object","properties":{"instructions":{"type":"string","minLength":1},"input":{},"tools":{"type":"array","items":{"type":"string"}},"max_turns":{"type":"integer","minimum":1,"maximum":100},"max_cost":{"type":"number","exclusiveMinimum":0},"output_schema":{"type":"object"},"parallel_tool_calls":{"type":"boolean"},"approval_for":{"type":"array","items":{"type":"string"}}},"required":["instructions","tools"]}')
ON CONFLICT (id) DO NOTHING;

ALTER TABLE step_maps ADD COLUMN wakes boolean NOT NULL DEFAULT false;
COMMENT ON COLUMN step_maps.wakes IS
    'An agent step: the item that ends its calls wakes it for its next turn (it is not joined).';

-- One row per turn of an agent step: the messages the turn added to the transcript (the
-- previous turn''s results as `tool` messages, then the model''s answer), the calls it asked for,
-- what its LLM call used. Written in the transaction that inserts the turn''s calls, so a worker
-- killed before it leaves nothing and the turn is asked again; after it, the calls run once.
CREATE TABLE agent_turns (
    step_id     uuid NOT NULL REFERENCES steps (id) ON DELETE CASCADE,
    task_id     uuid NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    turn        integer NOT NULL CHECK (turn BETWEEN 1 AND 200),
    messages    jsonb NOT NULL CHECK (jsonb_typeof(messages) = 'array'),
    -- [{"id", "tool", "parameters", "step_id" (its step's key, null when refused), "refused"?}]
    tool_calls  jsonb NOT NULL DEFAULT '[]' CHECK (jsonb_typeof(tool_calls) = 'array'),
    usage       jsonb NOT NULL DEFAULT '{}',
    cost        float8 CHECK (cost IS NULL OR cost >= 0),
    -- the answer broke output_schema and was asked again
    asked_again boolean NOT NULL DEFAULT false,
    -- the turn ended the step: {"output"} or {"stop", "message"}
    ended       jsonb,
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (step_id, turn)
);
CREATE INDEX agent_turns_task_idx ON agent_turns (task_id);

COMMENT ON TABLE agent_turns IS
    'One row per turn of an agent step: its messages, tool calls and usage (the agent issue).';

-- The agents' tool calls, per day and tool (live rows; `trellis.tenant` as every view): how
-- many ran, how many Trellis healed (a retry or a repair before they succeeded), how many it
-- gave up on (the model was told the error), and how many of those the model recovered from
-- by itself (a later turn of the same agent called the same tool, and that call succeeded).
CREATE VIEW agent_calls AS
WITH c AS (
    SELECT s.task_id, s.map_step_id AS agent_id, s.step_key, s.tool, s.status, s.attempts,
           s.created_at, t.tenant,
           split_part(substr(s.step_key, length(a.step_key) + 2), '.', 1)::int AS turn,
           EXISTS (SELECT 1 FROM steps o
                   WHERE o.task_id = s.task_id AND o.plan_version = s.plan_version
                     AND o.step_key = s.step_key AND o.status = 'superseded') AS repaired
    FROM steps s
    JOIN step_maps m ON m.step_id = s.map_step_id AND m.wakes
    JOIN steps a ON a.id = s.map_step_id
    JOIN tasks t ON t.id = s.task_id
    WHERE s.status <> 'superseded' AND trellis_counts(t.tenant)
)
SELECT c.created_at::date AS day, c.tool,
       count(*) AS calls,
       count(*) FILTER (WHERE c.status = 'succeeded') AS succeeded,
       count(*) FILTER (WHERE c.status = 'succeeded' AND (c.attempts > 1 OR c.repaired))
           AS healed_by_trellis,
       count(*) FILTER (WHERE c.status = 'skipped') AS given_up,
       count(*) FILTER (WHERE c.status = 'skipped' AND EXISTS (
           SELECT 1 FROM c l WHERE l.agent_id = c.agent_id AND l.tool = c.tool
                               AND l.turn > c.turn AND l.status = 'succeeded'))
           AS recovered_by_model
FROM c
GROUP BY 1, 2;

COMMENT ON VIEW agent_calls IS
    'Agents'' tool calls per day and tool: healed by Trellis, given up, recovered by the model.';
