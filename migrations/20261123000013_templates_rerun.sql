-- Workflow templates and reruns (seeds issue).
--
-- A template is a parameterized plan: its strings may use ${input.key}; a task submitted with
-- {"template": id, "input": {...}} gets the plan instantiated (input checked against
-- input_schema) as version 1 with origin 'template:<id>'. A rerun stores a new version with
-- origin 'rerun'.

CREATE TABLE templates (
    id            text PRIMARY KEY CHECK (id ~ '^[A-Za-z0-9_.:-]{1,128}$'),
    description   text NOT NULL DEFAULT '',
    input_schema  jsonb NOT NULL DEFAULT '{"type": "object"}'::jsonb,
    plan          jsonb NOT NULL CHECK (jsonb_typeof(plan) = 'object'),
    created_at    timestamptz NOT NULL DEFAULT now()
);

COMMENT ON TABLE templates IS
    'Workflow templates: parameterized plans (${input.key}) submitted by id with an input.';

ALTER TABLE plans DROP CONSTRAINT plans_origin_check;
ALTER TABLE plans ADD CONSTRAINT plans_origin_check
    CHECK (origin IN ('initial', 'repair', 'resume', 'rerun')
           OR origin LIKE 'replan:%' OR origin LIKE 'template:%');
