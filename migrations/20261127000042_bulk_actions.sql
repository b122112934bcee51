-- Bulk actions (operations issue, part 1): cancel, resume or rerun every task a filter (or a
-- list of ids) matches, e.g. after an incident. The match is taken once, at creation, into
-- `bulk_action_tasks` (a relative time bound is bound then, with the database's clock); the
-- workers then apply the action in batches in task id order (keyset: `after`), one short
-- transaction per batch that records each task's outcome with the action itself, so a worker
-- killed at any instant loses or repeats nothing. An abort takes the action's row lock, so it
-- waits for at most the batch in progress.
CREATE TABLE bulk_actions (
    id          uuid PRIMARY KEY,
    -- the creator's tenant (what it may read back)
    tenant      trellis_tenant NOT NULL DEFAULT 'default',
    name        text CHECK (length(name) <= 200),
    action      text NOT NULL CHECK (action IN ('cancel', 'resume', 'rerun')),
    -- the filter as given, with since and until bound; null when ids were given
    filter      jsonb,
    -- rerun: 'first_failed' or a step id
    from_step   text,
    -- 'state', not 'status': not a task or step status (no move of the state machines)
    state       text NOT NULL DEFAULT 'running' CHECK (state IN ('running', 'done', 'aborted')),
    matched     integer NOT NULL DEFAULT 0 CHECK (matched >= 0),
    done        integer NOT NULL DEFAULT 0 CHECK (done >= 0),
    failed      integer NOT NULL DEFAULT 0 CHECK (failed >= 0),
    -- keyset: the tasks after this id are left
    after       uuid,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    finished_at timestamptz
);
COMMENT ON TABLE bulk_actions IS
    'Bulk actions (POST /api/v1/bulk-actions): cancel, resume or rerun the tasks matched at creation, in batches.';
CREATE INDEX bulk_actions_running_idx ON bulk_actions (created_at) WHERE state = 'running';
CREATE INDEX bulk_actions_tenant_idx ON bulk_actions (tenant, created_at DESC);

CREATE TABLE bulk_action_tasks (
    bulk_action_id uuid NOT NULL REFERENCES bulk_actions (id) ON DELETE CASCADE,
    -- no foreign key: retention may delete the task meanwhile (it is then 'failed')
    task_id        uuid NOT NULL,
    -- null: not yet applied
    outcome        text CHECK (outcome IN ('done', 'failed')),
    error          text,
    PRIMARY KEY (bulk_action_id, task_id)
);
COMMENT ON TABLE bulk_action_tasks IS
    'The tasks a bulk action matched at creation, and what applying it to each did.';

-- The tasks a bulk action's filter matches (parameters prefixed: a bare `status` would be the
-- column): in `scope` (null: every tenant), with `status`,
-- created in [since, until), whose description contains `q` (a LIKE pattern), submitted from
-- `template`, whose metadata contains `metadata`; or, with `ids`, those of them in scope. One
-- definition for the dry run and the creation.
CREATE FUNCTION trellis_bulk_match(p_scope text, p_ids uuid[], p_status text,
                                   p_since timestamptz, p_until timestamptz, p_q text,
                                   p_template text, p_metadata jsonb)
RETURNS SETOF uuid LANGUAGE sql STABLE AS $$
    SELECT t.id FROM tasks t
    WHERE (p_scope IS NULL OR t.tenant = p_scope)
      AND (p_ids IS NULL OR t.id = ANY (p_ids))
      AND (p_status IS NULL OR t.status = p_status)
      AND (p_since IS NULL OR t.created_at >= p_since)
      AND (p_until IS NULL OR t.created_at < p_until)
      AND (p_q IS NULL OR t.description ILIKE p_q)
      AND (p_metadata IS NULL OR t.metadata @> p_metadata)
      AND (p_template IS NULL OR EXISTS (
              SELECT 1 FROM plans p
              WHERE p.task_id = t.id AND p.version = 1 AND p.origin = 'template:' || p_template))
$$;
