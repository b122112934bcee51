-- The dashboard's text filter (GET /api/v1/tasks?q=): a description that contains the text, in
-- any case. A trigram index answers `ILIKE '%text%'` without reading every task; pg_trgm is a
-- trusted extension (PostgreSQL 13+), so the database's owner may create it. GIN's pending list
-- (fastupdate, on by default) keeps the submit's cost to an append.
CREATE EXTENSION IF NOT EXISTS pg_trgm;
CREATE INDEX tasks_description_trgm ON tasks USING gin (description gin_trgm_ops);

COMMENT ON INDEX tasks_description_trgm IS 'the dashboard''s text filter: description ILIKE ''%text%''';
