-- Fair queues (fairness issue): concurrency keys served round-robin by weight, and priority
-- aging.
--
-- Stride scheduling at submit (Temporal's fairness passes): a task's `fair_pass` is where its
-- key left off (the key's largest pass) or the queue's head, whichever is later, plus
-- 1,000,000 / the key's weight. The claim orders by priority, then pass, so within a priority
-- the keys take turns in proportion to their weights, whatever their backlogs, and the claim
-- is still one index walk. A key that was idle restarts at the head: it banks no credit.
-- Tasks without a key share the key '' (so with no keys at all, passes follow submission:
-- first in, first out, as before).
ALTER TABLE tasks ADD COLUMN concurrency_key text CHECK (char_length(concurrency_key) BETWEEN 1 AND 128);
ALTER TABLE tasks ADD COLUMN fair_pass bigint NOT NULL DEFAULT 0;
-- levels the maintenance pass has raised the task by (aging), and when it last did
ALTER TABLE tasks ADD COLUMN priority_boost integer NOT NULL DEFAULT 0;
ALTER TABLE tasks ADD COLUMN aged_at timestamptz;
COMMENT ON COLUMN tasks.concurrency_key IS 'the fairness key the claim takes turns between (none: the shared key '''')';
COMMENT ON COLUMN tasks.fair_pass IS 'the task''s turn among its priority''s tasks (stride scheduling: 1,000,000 / weight apart per key)';
COMMENT ON COLUMN tasks.priority_boost IS 'priority levels added by aging (priority includes them)';

-- where each key left off: one probe per key at submit (neither column changes after it)
CREATE INDEX tasks_fair_key_idx ON tasks ((coalesce(concurrency_key, '')), fair_pass DESC);

CREATE TABLE key_limits (
    pattern      text PRIMARY KEY CHECK (char_length(pattern) BETWEEN 1 AND 128),
    -- the pattern as a LIKE pattern (`*` any run of characters; the rest literal)
    like_pattern text NOT NULL,
    max_running  integer CHECK (max_running IS NULL OR max_running >= 0),
    weight       double precision NOT NULL DEFAULT 1 CHECK (weight >= 0.001 AND weight <= 1000),
    updated_at   timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE key_limits IS
    'Per concurrency key pattern: weight (the claim''s share) and max_running. The most specific pattern wins: an exact key, then the longest pattern.';

ALTER TABLE claim_queue ADD COLUMN pass bigint NOT NULL DEFAULT 0;
DROP INDEX claim_queue_claim_idx;
CREATE INDEX claim_queue_claim_idx ON claim_queue (lane, priority DESC, pass, task_created_at, task_id, position)
    WHERE NOT delayed;

-- a template's key: ${input.…} / ${metadata.…} placeholders, filled at each submit
ALTER TABLE templates ADD COLUMN concurrency_key text CHECK (char_length(concurrency_key) BETWEEN 1 AND 256);
