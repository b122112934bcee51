-- The LLM brain: a `plan` decision for description-only tasks, and the cost of every LLM call.

-- A description-only task starts in `planning` with a claimable `plan` decision.
ALTER TABLE decisions DROP CONSTRAINT decisions_kind_check;
ALTER TABLE decisions ADD CONSTRAINT decisions_kind_check
    CHECK (kind IN ('plan', 'step_reflection', 'step_repair', 'overall_reflection', 'replan', 'evaluation'));
DROP INDEX decisions_one_open_per_task;
CREATE UNIQUE INDEX decisions_one_open_per_task ON decisions (task_id)
    WHERE status IN ('pending', 'running') AND kind IN ('plan', 'overall_reflection', 'replan', 'evaluation');

-- Optional cap on LLM calls per task (NULL: no cap); past it, decisions take their fallbacks.
ALTER TABLE tasks ADD COLUMN max_llm_calls integer CHECK (max_llm_calls IS NULL OR max_llm_calls >= 0);

-- One row per LLM call (one decision request, its retries and its re-ask included), written
-- whether or not the answer was usable or the decision still applied: the tokens were spent.
CREATE TABLE llm_calls (
    id                 bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    task_id            uuid NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    decision_id        uuid REFERENCES decisions (id) ON DELETE SET NULL,
    -- the json_schema name of the request: tool_selection, plan, step_reflection, step_repair,
    -- overall_reflection, replan, evaluation
    name               text NOT NULL,
    model              text NOT NULL,
    ok                 boolean NOT NULL,
    error              text,
    -- HTTP requests this call made (retries and the re-ask included)
    requests           integer NOT NULL CHECK (requests >= 0),
    prompt_tokens      bigint NOT NULL DEFAULT 0 CHECK (prompt_tokens >= 0),
    completion_tokens  bigint NOT NULL DEFAULT 0 CHECK (completion_tokens >= 0),
    total_tokens       bigint NOT NULL DEFAULT 0 CHECK (total_tokens >= 0),
    -- measured by the worker around the call (a duration, not a point in time)
    latency_ms         bigint,
    created_at         timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX llm_calls_task_idx ON llm_calls (task_id);

-- Cost reporting: LLM usage per task.
CREATE VIEW llm_usage_by_task AS
SELECT task_id,
       count(*)                                  AS calls,
       count(*) FILTER (WHERE NOT ok)            AS failed_calls,
       coalesce(sum(requests), 0)::bigint        AS requests,
       coalesce(sum(prompt_tokens), 0)::bigint   AS prompt_tokens,
       coalesce(sum(completion_tokens), 0)::bigint AS completion_tokens,
       coalesce(sum(total_tokens), 0)::bigint    AS total_tokens
FROM llm_calls
GROUP BY task_id;
