-- Cost in money (operations issue, part 2). A price map per model (input, output and
-- cached-input prices per million tokens, valid from a time); each LLM call gets its cost from
-- the price valid at its time when it is written (a trigger), so history stays right when a
-- price changes. An HTTP tool may report `usage.cost` with its answer: the attempt's `cost`.
-- A task keeps its running total (`tasks.cost`); `max_cost` stops it, `cost_warned_at`
-- remembers the warning. The views count in the price map's currency.

CREATE TABLE model_prices (
    model                  text NOT NULL CHECK (length(model) BETWEEN 1 AND 200),
    valid_from             timestamptz NOT NULL,
    input_per_mtok         numeric NOT NULL CHECK (input_per_mtok >= 0),
    output_per_mtok        numeric NOT NULL CHECK (output_per_mtok >= 0),
    -- null: cached input tokens cost the input price
    cached_input_per_mtok  numeric CHECK (cached_input_per_mtok >= 0),
    updated_at             timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (model, valid_from)
);
COMMENT ON TABLE model_prices IS
    'Prices per million tokens by model, each valid from a time (PUT /api/v1/model-prices, [[llm.prices]]).';

ALTER TABLE llm_calls ADD COLUMN cached_tokens bigint NOT NULL DEFAULT 0 CHECK (cached_tokens >= 0);
ALTER TABLE llm_calls ADD COLUMN cost numeric CHECK (cost IS NULL OR cost >= 0);
COMMENT ON COLUMN llm_calls.cached_tokens IS 'prompt tokens the provider served from its cache';
COMMENT ON COLUMN llm_calls.cost IS
    'from the model''s price valid at created_at, when written (null: the model has no price)';
ALTER TABLE attempts ADD COLUMN cost numeric CHECK (cost IS NULL OR cost >= 0);
COMMENT ON COLUMN attempts.cost IS 'the cost the tool reported (its answer''s usage.cost)';
ALTER TABLE tasks ADD COLUMN cost double precision NOT NULL DEFAULT 0 CHECK (cost >= 0);
ALTER TABLE tasks ADD COLUMN max_cost double precision CHECK (max_cost IS NULL OR max_cost >= 0);
ALTER TABLE tasks ADD COLUMN cost_warned_at timestamptz;
COMMENT ON COLUMN tasks.cost IS 'the task''s LLM calls and tool attempts'' costs so far';
COMMENT ON COLUMN tasks.max_cost IS 'past it the task stops (failed, cost_limit_exceeded); null: none';
ALTER TABLE templates ADD COLUMN max_cost double precision CHECK (max_cost IS NULL OR max_cost >= 0);
COMMENT ON COLUMN templates.max_cost IS 'the max_cost of a task submitted from it (its own limits win)';

-- The cost of an LLM call: uncached prompt tokens at the input price, cached ones at the
-- cached-input price (else the input price), completion tokens at the output price.
CREATE FUNCTION trellis_llm_cost() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    SELECT ((NEW.prompt_tokens - least(NEW.cached_tokens, NEW.prompt_tokens)) * p.input_per_mtok
            + least(NEW.cached_tokens, NEW.prompt_tokens)
              * coalesce(p.cached_input_per_mtok, p.input_per_mtok)
            + NEW.completion_tokens * p.output_per_mtok) / 1000000
    INTO NEW.cost
    FROM model_prices p
    WHERE p.model = NEW.model AND p.valid_from <= NEW.created_at
    ORDER BY p.valid_from DESC LIMIT 1;
    RETURN NEW;
END;
$$;
CREATE TRIGGER llm_calls_cost BEFORE INSERT ON llm_calls
    FOR EACH ROW EXECUTE FUNCTION trellis_llm_cost();

-- The template a task was submitted from ('' for none).
CREATE FUNCTION trellis_task_template(task uuid) RETURNS text LANGUAGE sql STABLE AS $$
    SELECT coalesce((SELECT substr(p.origin, 10) FROM plans p
                     WHERE p.task_id = task AND p.version = 1 AND p.origin LIKE 'template:%'), '')
$$;

-- Every cost, live: a priced LLM call (kind 'llm', its model) or an attempt with a cost (kind
-- 'tool', its tool), with its task, day and the task's template and tenant.
CREATE VIEW cost_rows AS
SELECT 'llm'::text AS kind, l.model AS name, l.task_id,
       date_trunc('day', l.created_at)::date AS day, l.cost
FROM llm_calls l WHERE l.cost IS NOT NULL
UNION ALL
SELECT 'tool', a.tool, a.task_id, date_trunc('day', a.finished_at)::date, a.cost
FROM attempts a WHERE a.cost IS NOT NULL;

-- What retention keeps of the costs of the tasks it deletes.
CREATE TABLE cost_rollups (
    day       date NOT NULL,
    kind      text NOT NULL CHECK (kind IN ('llm', 'tool')),
    name      text NOT NULL,
    template  text NOT NULL,
    tenant    trellis_tenant NOT NULL,
    items     bigint NOT NULL,
    cost      numeric NOT NULL,
    UNIQUE (day, kind, name, template, tenant)
);

CREATE VIEW cost_all_rollup AS
SELECT c.day, c.kind, c.name, trellis_task_template(c.task_id) AS template, t.tenant::text,
       count(*) AS items, sum(c.cost) AS cost
FROM cost_rows c JOIN tasks t ON t.id = c.task_id
WHERE trellis_counts(t.tenant)
GROUP BY 1, 2, 3, 4, 5
UNION ALL
SELECT day, kind, name, template, tenant::text, items, cost FROM cost_rollups
WHERE trellis_counts(tenant);

-- Cost per task: its LLM calls', its tools', both, against its max_cost.
CREATE VIEW cost_by_task AS
SELECT t.id AS task_id, t.tenant::text AS tenant, trellis_task_template(t.id) AS template,
       t.status, t.max_cost,
       coalesce(sum(c.cost) FILTER (WHERE c.kind = 'llm'), 0) AS llm_cost,
       coalesce(sum(c.cost) FILTER (WHERE c.kind = 'tool'), 0) AS tool_cost,
       coalesce(sum(c.cost), 0) AS cost
FROM tasks t LEFT JOIN cost_rows c ON c.task_id = t.id
WHERE trellis_counts(t.tenant)
GROUP BY t.id;

-- Cost per template ('' for tasks submitted without one) and day.
CREATE VIEW cost_by_template_day AS
SELECT day, template,
       coalesce(sum(cost) FILTER (WHERE kind = 'llm'), 0) AS llm_cost,
       coalesce(sum(cost) FILTER (WHERE kind = 'tool'), 0) AS tool_cost,
       sum(cost) AS cost
FROM cost_all_rollup GROUP BY day, template;

-- Tool cost per tool and day (the attempts that reported one).
CREATE VIEW cost_by_tool_day AS
SELECT day, name AS tool, sum(items) AS attempts, sum(cost) AS cost
FROM cost_all_rollup WHERE kind = 'tool' GROUP BY day, name;

-- What each recovery action cost: the LLM calls of the recovery decisions of its task since
-- the task's previous recovery action (a plain retry has none), and the tool cost of the
-- attempts of its step that it led to (up to the step's next recovery action).
CREATE VIEW recovery_costs AS
SELECT o.id, o.task_id, o.tier, o.action, o.saved, o.failed_at, o.tenant,
       coalesce((SELECT t.status = 'succeeded' FROM tasks t WHERE t.id = o.task_id), false)
           AS task_succeeded,
       coalesce((SELECT sum(l.cost) FROM llm_calls l JOIN decisions d ON d.id = l.decision_id
                 WHERE l.task_id = o.task_id AND l.cost IS NOT NULL
                   AND d.kind IN ('step_reflection', 'step_repair', 'overall_reflection', 'replan')
                   AND l.created_at <= o.created_at
                   AND l.created_at > coalesce((SELECT max(r0.created_at) FROM recoveries r0
                                                WHERE r0.task_id = o.task_id AND r0.id < o.id),
                                               '-infinity')), 0) AS llm_cost,
       coalesce((SELECT sum(a.cost) FROM attempts a
                 WHERE a.task_id = o.task_id AND a.step_key = o.step_key
                   AND a.id > r.failed_attempt_id AND a.cost IS NOT NULL
                   AND NOT EXISTS (SELECT 1 FROM recoveries r2
                                   WHERE r2.task_id = o.task_id AND r2.step_key = o.step_key
                                     AND r2.id > o.id AND r2.failed_attempt_id < a.id)), 0)
           AS tool_cost
FROM recovery_outcomes o JOIN recoveries r ON r.id = o.id;

-- What retention keeps of them.
CREATE TABLE recovery_cost_rollups (
    day          date NOT NULL,
    tier         integer NOT NULL,
    action       text NOT NULL,
    tenant       trellis_tenant NOT NULL,
    actions      bigint NOT NULL,
    llm_cost     numeric NOT NULL,
    tool_cost    numeric NOT NULL,
    saved_steps  bigint NOT NULL,
    tasks_saved  bigint NOT NULL,
    UNIQUE (day, tier, action, tenant)
);

CREATE VIEW recovery_cost_all_rollup AS
SELECT date_trunc('day', failed_at)::date AS day, tier, action, count(*) AS actions,
       sum(llm_cost) AS llm_cost, sum(tool_cost) AS tool_cost,
       count(*) FILTER (WHERE saved) AS saved_steps,
       count(DISTINCT task_id) FILTER (WHERE saved AND task_succeeded) AS tasks_saved
FROM recovery_costs WHERE trellis_counts(tenant)
GROUP BY 1, 2, 3
UNION ALL
SELECT day, tier, action, actions, llm_cost, tool_cost, saved_steps, tasks_saved
FROM recovery_cost_rollups WHERE trellis_counts(tenant);

-- What recovery costs, by tier and strategy (the action), against what it saved: the steps
-- that succeeded after it (it being their last recovery), and the tasks among theirs that then
-- succeeded.
CREATE VIEW recovery_cost_by_tier AS
SELECT tier, action AS strategy, sum(actions)::bigint AS actions,
       sum(llm_cost) AS llm_cost, sum(tool_cost) AS tool_cost, sum(llm_cost + tool_cost) AS cost,
       sum(saved_steps)::bigint AS saved_steps, sum(tasks_saved)::bigint AS tasks_saved,
       sum(llm_cost + tool_cost) / nullif(sum(tasks_saved), 0) AS cost_per_task_saved
FROM recovery_cost_all_rollup GROUP BY tier, action;
