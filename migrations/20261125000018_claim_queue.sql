-- The claim queue (queue-depth issue): a claim reads about what it takes, at any depth.
--
-- One narrow row per *claimable* step: a ready step of a running task that is among the task's
-- first `max_concurrent_steps - running` ready steps in plan order. So for every task
--     (its entries here) + (its running steps) <= max_concurrent_steps,
-- and a claim, which turns entries into running steps one for one, can take whatever it finds
-- without counting anything. The per-task cap is kept where a step becomes ready or stops
-- running (`store::claim_queue::sync`, under the task's row lock), not at claim time.
--
-- The claim walks `claim_queue_claim_idx` in claim order (priority, then the task's age, then
-- plan order) with `LIMIT n FOR UPDATE SKIP LOCKED` and deletes what it took: its work is
-- bounded by n, whatever the depth. A task holds at most its `max_concurrent_steps` entries,
-- so a task with 10,000 ready steps cannot fill the head of the queue.
--
-- `lane` is '' for tools without limits and the tool's id for a tool with `max_concurrency` or
-- a rate limit (a `tool_buckets` row): the common claim walks lane '' only; the limited lanes
-- are walked one by one, each as far as its tool has room. `delayed` entries (a retry's
-- backoff) sit in their own index by `run_after` and are taken once due, so a step waiting for
-- its backoff is never walked over.
--
-- Dead entries: a claim deletes what it takes, and the deleted entries stay in the claim index
-- until VACUUM removes them, which it cannot do while any transaction older than them is open
-- (a long report). A claim would then walk every entry claimed since the report began. So the
-- queue is a ring of partitions (PgQue's rotation): entries go to the ring's current slot; the
-- workers turn the ring every couple of seconds and TRUNCATE a slot that has been drained
-- (moving its few remaining entries to the current slot first, under the slot's exclusive
-- lock), which frees its dead entries whatever snapshot is open (`store::claim_queue`).
CREATE TABLE claim_ring (
    id         boolean PRIMARY KEY DEFAULT true CHECK (id),
    -- the slot new entries go to
    slot       smallint NOT NULL DEFAULT 0 CHECK (slot BETWEEN 0 AND 3),
    turned_at  timestamptz NOT NULL DEFAULT now()
);
INSERT INTO claim_ring DEFAULT VALUES;

COMMENT ON TABLE claim_ring IS
    'The claim queue''s current slot (a partition of claim_queue); the workers turn it and truncate drained slots.';

CREATE FUNCTION trellis_claim_slot() RETURNS smallint LANGUAGE sql STABLE
    AS $$ SELECT slot FROM claim_ring $$;

CREATE TABLE claim_queue (
    step_id          uuid NOT NULL,
    task_id          uuid NOT NULL,
    priority         integer NOT NULL,
    task_created_at  timestamptz NOT NULL,
    position         integer NOT NULL,
    -- the step's effective tool (a recovery override wins)
    tool             text NOT NULL,
    lane             text NOT NULL,
    run_after        timestamptz NOT NULL,
    -- run_after was in the future when the entry was written
    delayed          boolean NOT NULL,
    slot             smallint NOT NULL DEFAULT trellis_claim_slot()
) PARTITION BY LIST (slot);

CREATE TABLE claim_queue_0 PARTITION OF claim_queue FOR VALUES IN (0) WITH (fillfactor = 100);
CREATE TABLE claim_queue_1 PARTITION OF claim_queue FOR VALUES IN (1) WITH (fillfactor = 100);
CREATE TABLE claim_queue_2 PARTITION OF claim_queue FOR VALUES IN (2) WITH (fillfactor = 100);
CREATE TABLE claim_queue_3 PARTITION OF claim_queue FOR VALUES IN (3) WITH (fillfactor = 100);

COMMENT ON TABLE claim_queue IS
    'Claimable steps: per task at most max_concurrent_steps minus its running steps, the first ready ones in plan order. Written under the task row lock; a claim deletes what it takes. Partitioned by ring slot (claim_ring).';

CREATE INDEX claim_queue_claim_idx ON claim_queue (lane, priority DESC, task_created_at, task_id, position)
    WHERE NOT delayed;
CREATE INDEX claim_queue_delayed_idx ON claim_queue (run_after) WHERE delayed;
CREATE INDEX claim_queue_task_idx ON claim_queue (task_id);

-- The claim no longer walks running tasks.
DROP INDEX tasks_claim_order_idx;

-- A tool that gains or loses its limits moves its entries to its own lane or back to ''.
CREATE FUNCTION trellis_claim_lanes() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    was boolean := TG_OP <> 'INSERT'
                   AND (OLD.max_concurrency IS NOT NULL OR OLD.rate_limit_per_sec IS NOT NULL);
    now_limited boolean := TG_OP <> 'DELETE'
                   AND (NEW.max_concurrency IS NOT NULL OR NEW.rate_limit_per_sec IS NOT NULL);
    t text := CASE WHEN TG_OP = 'DELETE' THEN OLD.id ELSE NEW.id END;
BEGIN
    IF was IS DISTINCT FROM now_limited THEN
        UPDATE claim_queue SET lane = CASE WHEN now_limited THEN t ELSE '' END WHERE tool = t;
    END IF;
    RETURN NULL;
END;
$$;

CREATE TRIGGER tools_claim_lanes AFTER INSERT OR UPDATE OR DELETE ON tools
    FOR EACH ROW EXECUTE FUNCTION trellis_claim_lanes();

-- Fill the queue from the work already queued.
INSERT INTO claim_queue (step_id, task_id, priority, task_created_at, position, tool, lane,
                         run_after, delayed)
SELECT s.id, t.id, t.priority, t.created_at, s.position, s.tool,
       CASE WHEN EXISTS (SELECT 1 FROM tool_buckets b WHERE b.tool_id = s.tool) THEN s.tool ELSE '' END,
       s.run_after, s.run_after > now()
FROM tasks t
CROSS JOIN LATERAL (
    SELECT greatest(t.max_concurrent_steps
                    - (SELECT count(*) FROM steps r WHERE r.task_id = t.id AND r.status = 'running'), 0) AS room
) room
CROSS JOIN LATERAL (
    SELECT s.id, s.position, s.run_after, coalesce(s.tool_override, s.tool) AS tool
    FROM steps s WHERE s.task_id = t.id AND s.status = 'ready'
    ORDER BY s.position LIMIT room.room
) s
WHERE t.status = 'running';
