-- A schedule's id is its tenant's own (fairness issue, part 3): two tenants may both have a
-- schedule `nightly`, and creating one never tells a tenant about another's. Its ticks'
-- idempotency keys (`schedule:<id>:<tick>`) are already unique per tenant.
ALTER TABLE schedules DROP CONSTRAINT schedules_pkey;
ALTER TABLE schedules ADD PRIMARY KEY (tenant, id);
