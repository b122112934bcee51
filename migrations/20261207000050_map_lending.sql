-- A map's item waiting out its backoff lends its place in the window (recovery, fifth step):
-- when the map's window is the task's own cap, the claim keeps the items running at once
-- within it, so the next item may start meanwhile (`map/lend`). `lent` counts the places lent.
ALTER TABLE step_maps ADD COLUMN lent integer NOT NULL DEFAULT 0 CHECK (lent >= 0);

COMMENT ON COLUMN step_maps.lent IS
    'Items released because an item waited out a backoff (its place lent), not because one ended.';
