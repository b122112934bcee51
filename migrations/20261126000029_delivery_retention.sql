-- Webhook deliveries that were delivered or given up are history: the workers' retention
-- deletes them after `[retention] finished_task_ttl_secs`, like the tasks they came from (they
-- have no foreign key to `tasks`, so a task's deletion left them behind; a soak found the table
-- growing by every delivery, forever). Pending ones stay until they are delivered or given up.
CREATE INDEX webhook_deliveries_done_idx ON webhook_deliveries (created_at) WHERE status <> 'pending';
