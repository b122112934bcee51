-- Fan-out (the fan-out issue): a step that maps over a list.
--
-- A map step keeps its `map`; when a worker claims it, the list is resolved and the step
-- expanded in one transaction: the step goes `running → waiting` (no slot, no lease), a
-- `step_maps` row keeps the list and its counters, and the first `max_parallel` item steps
-- (`<key>[<index>]`, `map_step_id`, `item_index`, `item`) are inserted ready. Each item that
-- ends releases the next (the sliding window, one narrow row per map, no sweep); the one that
-- ends the list joins the map step (`waiting → succeeded`, its output the items' outputs in
-- order) in the same transaction. An expansion after a replan keeps the items that succeeded
-- in an earlier version with the same item, tool and parameters (copied, not run again).
ALTER TABLE steps
    ADD COLUMN map         jsonb,
    ADD COLUMN map_step_id uuid,
    ADD COLUMN item_index  integer CHECK (item_index >= 0),
    ADD COLUMN item        jsonb,
    ADD CONSTRAINT steps_item_check CHECK ((map_step_id IS NULL) = (item_index IS NULL));

CREATE TABLE step_maps (
    step_id      uuid PRIMARY KEY REFERENCES steps (id) ON DELETE CASCADE,
    task_id      uuid NOT NULL,
    -- the resolved list, read once per released item
    items        jsonb NOT NULL,
    total        integer NOT NULL CHECK (total >= 0),
    -- the release cursor: every item before it has its step (items a replan kept may lie
    -- beyond it; the release skips them)
    released     integer NOT NULL CHECK (released BETWEEN 0 AND total),
    -- items succeeded (kept by a replan included) or given up (`on_item_failure: continue`)
    ended        integer NOT NULL DEFAULT 0 CHECK (ended BETWEEN 0 AND total),
    given_up     integer NOT NULL DEFAULT 0 CHECK (given_up BETWEEN 0 AND ended),
    max_parallel integer NOT NULL CHECK (max_parallel >= 1)
);

COMMENT ON TABLE step_maps IS
    'One row per expanded map step: its list and how far its items are (the fan-out issue).';
