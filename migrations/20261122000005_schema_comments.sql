-- Documentation only: no table, column or constraint changes. Applied migrations cannot be
-- edited (sqlx verifies their checksums), so what earlier comments got wrong, or no longer get
-- right, is corrected here, and the schema documents itself for `\d+` and SQL clients:
--   * 20261122000001: the status enums live in src/domain/status.rs (not src/model.rs), and
--     every status write is a named move of src/domain/transitions.rs, made only by
--     src/store/transitions.rs; tasks.state_version fences the decisions of migration 0002.
--   * 20261122000004: a description-only task starts `pending` (not `planning`); claiming its
--     `plan` decision moves it to `planning`.

COMMENT ON COLUMN tasks.status IS
    'TaskStatus (src/domain/status.rs); moves are TaskMove (src/domain/transitions.rs), drawn in docs/state-machine.md';
COMMENT ON COLUMN tasks.state_version IS
    'bumped by every status or plan change of the task; task-level decisions apply only if it is unchanged';
COMMENT ON COLUMN steps.status IS
    'StepStatus (src/domain/status.rs); moves are StepMove (src/domain/transitions.rs), drawn in docs/state-machine.md';
COMMENT ON COLUMN steps.lease_token IS
    'fencing token: grows with every claim; every change to a running step must present it';
COMMENT ON COLUMN decisions.status IS
    'DecisionStatus (src/domain/status.rs); moves are DecisionMove (src/domain/transitions.rs), drawn in docs/state-machine.md';
COMMENT ON TABLE decisions IS
    'brain calls as claimable, leased, fenced work; a description-only task waits pending with a plan decision and is planning while a worker runs it';
