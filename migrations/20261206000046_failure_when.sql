-- Recovery, fifth step: a tool says how its 2xx answers report a failure.
ALTER TABLE tools ADD COLUMN failure_when jsonb NOT NULL DEFAULT '[]'
    CHECK (jsonb_typeof(failure_when) = 'array');
COMMENT ON COLUMN tools.failure_when IS
    'Rules [{pointer, equals | present, category, retryable, retry_after_pointer, message_pointer}]: a 2xx answer whose body matches one is a failed call (the well-known envelopes are read without them).';
