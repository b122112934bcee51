-- The fleet view (GET /api/v1/workers): what each worker holds at its last heartbeat, and the
-- lease it runs with. A worker whose last heartbeat is older than its lease is dead to the
-- fleet (its leases have expired and the rescue takes its work back).
ALTER TABLE workers
    ADD COLUMN in_flight  integer NOT NULL DEFAULT 0,
    ADD COLUMN lease_secs double precision NOT NULL DEFAULT 30;

COMMENT ON COLUMN workers.in_flight IS 'steps and decisions the worker held at its last heartbeat';
COMMENT ON COLUMN workers.lease_secs IS 'the worker''s lease: a heartbeat older than this means the worker is gone';
