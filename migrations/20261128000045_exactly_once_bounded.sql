-- Exactly once, and bounded (guarantees issue).
--
-- One idempotency key per tool call: the same for every attempt of the call, derived from what
-- identifies it with this deployment's secret (`domain::call_key`). Every worker reads the
-- secret when it registers; it never leaves the database otherwise.
CREATE TABLE deployment (
    id              boolean PRIMARY KEY DEFAULT true CHECK (id),
    -- 244 random bits (two v4 UUIDs, from the server's strong random source)
    call_key_secret bytea NOT NULL
);
INSERT INTO deployment (call_key_secret)
VALUES (decode(replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', ''), 'hex'));
COMMENT ON TABLE deployment IS 'One row: what every process of this deployment shares';

-- The key each attempt's call carried (HTTP and MCP tools, http_request; null for calls that
-- take none), so a tool's log and Trellis's can be matched.
ALTER TABLE attempts ADD COLUMN idempotency_key text;
COMMENT ON COLUMN attempts.idempotency_key IS
    'The Idempotency-Key the call carried: the same for every attempt of one call';

-- Bounded trees: how many tasks descend from each root, over its life (a child's start
-- counts it, under this row's lock, in the transaction that inserts the child).
CREATE TABLE task_trees (
    root_task_id uuid PRIMARY KEY REFERENCES tasks (id) ON DELETE CASCADE,
    descendants  integer NOT NULL CHECK (descendants >= 0)
);
COMMENT ON TABLE task_trees IS
    'Descendants started under each root task ([limits] max_descendants); only roots with children have a row';
-- every child walks up to its root (only child rows are read: tasks_parent_idx)
INSERT INTO task_trees (root_task_id, descendants)
WITH RECURSIVE up(id, parent) AS (
    SELECT c.id, c.parent_task_id FROM tasks c WHERE c.parent_task_id IS NOT NULL
    UNION ALL
    SELECT p.id, p.parent_task_id FROM up JOIN tasks p ON p.id = up.parent
)
SELECT id, count(*) FROM up WHERE parent IS NULL GROUP BY id;

-- a step's children, for the call that takes over its lost attempt's child (children only)
CREATE INDEX tasks_parent_step_idx ON tasks (parent_step_id) WHERE parent_step_id IS NOT NULL;
