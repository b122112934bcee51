-- The claim walks running tasks in claim order (priority, then age) and stops after LIMIT
-- matches; this partial index holds only running tasks, so it stays small however much
-- history the table keeps.
CREATE INDEX tasks_claim_order_idx ON tasks (priority DESC, created_at, id) WHERE status = 'running';
