-- Hot path, fourth step: a step's claim and its completion are HOT updates.
--
-- PostgreSQL writes an update as HOT (a new tuple on the same page, no index entry) only when no
-- indexed column changes, and a column in a partial index's predicate counts as indexed. Every
-- claim and every completion changes steps.status, which three indexes named in their
-- predicates, so both updates wrote an entry into every index of the table (0 % HOT, measured).
-- After this migration no index of steps reads status:
--
-- * the live-key index reads `live`, a stored generated column that changes only when a step
--   is superseded (a repair), not on a claim or a completion;
-- * the ready index is gone: a task's ready steps are found through steps_task_plan_idx (the
--   task's steps, which the promotion already reads in full), and the claim has walked the claim
--   queue since the queue-depth issue;
-- * the running index is replaced by running_steps, one narrow row per running step, kept by a
--   statement trigger from each statement's transition tables (so no writer has to remember it).
--   It answers the fleet-wide questions: the rescue's expired leases, the running gauges and
--   the task cap's count of tasks running steps.
ALTER TABLE steps ADD COLUMN live boolean GENERATED ALWAYS AS (status <> 'superseded') STORED;
COMMENT ON COLUMN steps.live IS
    'status <> ''superseded'' (generated): the live-key index reads it, so a claim or a completion leaves every index of steps untouched.';

-- room on each page for a step's two new versions (a claim, a completion) beside its first, so
-- that the updates stay on their page (a HOT update needs room there; pruning frees the dead
-- versions as soon as no snapshot needs them)
ALTER TABLE steps SET (fillfactor = 50);

DROP INDEX steps_live_key;
CREATE UNIQUE INDEX steps_live_key ON steps (task_id, plan_version, step_key) WHERE live;
DROP INDEX steps_ready_idx;
DROP INDEX steps_running_task_idx;

CREATE TABLE running_steps (
    step_id  uuid PRIMARY KEY,
    task_id  uuid NOT NULL
);
COMMENT ON TABLE running_steps IS
    'One row per step whose status is running (kept by the steps_running triggers): the index of running steps that steps itself no longer carries.';
INSERT INTO running_steps (step_id, task_id) SELECT id, task_id FROM steps WHERE status = 'running';

CREATE FUNCTION trellis_running_steps_updated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM running_steps r
    USING trellis_old o JOIN trellis_new n ON n.id = o.id
    WHERE r.step_id = o.id AND o.status = 'running' AND n.status <> 'running';
    INSERT INTO running_steps (step_id, task_id)
    SELECT n.id, n.task_id
    FROM trellis_new n JOIN trellis_old o ON o.id = n.id
    WHERE n.status = 'running' AND o.status <> 'running'
    ON CONFLICT (step_id) DO NOTHING;
    RETURN NULL;
END $$;

CREATE FUNCTION trellis_running_steps_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM running_steps r USING trellis_old o
    WHERE r.step_id = o.id AND o.status = 'running';
    RETURN NULL;
END $$;

CREATE TRIGGER steps_running_updated AFTER UPDATE ON steps
    REFERENCING OLD TABLE AS trellis_old NEW TABLE AS trellis_new
    FOR EACH STATEMENT EXECUTE FUNCTION trellis_running_steps_updated();
CREATE TRIGGER steps_running_deleted AFTER DELETE ON steps
    REFERENCING OLD TABLE AS trellis_old
    FOR EACH STATEMENT EXECUTE FUNCTION trellis_running_steps_deleted();

-- A step is inserted blocked or ready, never running (the table's lease check needs a lease
-- owner, which only a claim sets), so inserts need no trigger.
