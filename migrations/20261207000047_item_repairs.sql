-- Recovery, fifth step: a map's item is repaired on its own budget. The repairs an item has had
-- (carried to its repaired row); a step of the plan keeps 0 and spends the task's budget.
ALTER TABLE steps ADD COLUMN repair_count integer NOT NULL DEFAULT 0 CHECK (repair_count >= 0);
COMMENT ON COLUMN steps.repair_count IS
    'A map item''s single-step repairs so far (each item has `max_single_step_repairs` of its own; a plan step spends the task''s).';
