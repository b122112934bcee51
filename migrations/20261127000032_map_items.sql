-- A map's list, one row per item (the fan-out issue): the item a release inserts is read by
-- its key, not out of the whole list (which a list of 10,000 items made a 200 kB value read
-- back for every item released).
CREATE TABLE map_items (
    step_id uuid NOT NULL REFERENCES step_maps (step_id) ON DELETE CASCADE,
    idx     integer NOT NULL CHECK (idx >= 0),
    item    jsonb NOT NULL,
    PRIMARY KEY (step_id, idx)
);
COMMENT ON TABLE map_items IS 'A map step''s list, one row per item, in order (the fan-out issue).';
ALTER TABLE step_maps DROP COLUMN items;
-- items a replan kept when the map was expanded: only then does a release have to look for the
-- next item without a step (otherwise the next items are the ones after the cursor)
ALTER TABLE step_maps ADD COLUMN kept integer NOT NULL DEFAULT 0 CHECK (kept >= 0);
