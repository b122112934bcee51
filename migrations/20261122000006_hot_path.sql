-- Hot path (issue 10).
--
-- Workers cache tool definitions. Every change to `tools` bumps `tool_registry.version` in the
-- same transaction; a claim returns the version it saw, and a worker whose cache is older
-- reloads the registry before running the step, so a step never runs with a definition older
-- than the one committed before it was claimed, on any worker of the fleet.
CREATE TABLE tool_registry (
    id       boolean PRIMARY KEY DEFAULT true CHECK (id),
    version  bigint NOT NULL DEFAULT 1
);
INSERT INTO tool_registry DEFAULT VALUES;

CREATE FUNCTION trellis_tools_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE tool_registry SET version = version + 1;
    RETURN NULL;
END;
$$;

CREATE TRIGGER tools_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON tools
    FOR EACH STATEMENT EXECUTE FUNCTION trellis_tools_changed();

-- Room on each page for the new version of a row updated in place (HOT updates: tasks'
-- counters and event sequence, steps' leases) so an update does not move the row to another page.
ALTER TABLE tasks SET (fillfactor = 80);
ALTER TABLE steps SET (fillfactor = 80);
ALTER TABLE decisions SET (fillfactor = 80);

-- Every claim inserts its steps' new versions into each index whose predicate they match: the
-- three partial indexes on running steps are one. Heartbeats (by lease owner) and rescue (by
-- lease deadline) scan the running steps through the one left: the running set is bounded by
-- the fleet's concurrency, not by history.
DROP INDEX steps_lease_owner_idx;
DROP INDEX steps_running_idx;
