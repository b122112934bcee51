-- name: bulk/create
-- A bulk action and the tasks it matches (`trellis_bulk_match`), in one statement: since and
-- until are bound here, with the database's clock ($6/$8: an absolute time; $7/$9: seconds
-- before now). Returns the matched count and the bound times.
WITH bound AS (
    SELECT coalesce($6::timestamptz, now() - make_interval(secs => $7::float8)) AS since,
           coalesce($8::timestamptz, now() - make_interval(secs => $9::float8)) AS until
), matched AS (
    SELECT m.id FROM bound, trellis_bulk_match($2::text, $5::uuid[], $10::text, bound.since,
                                               bound.until, $11::text, $12::text, $13::jsonb) AS m(id)
), action AS (
    INSERT INTO bulk_actions (id, tenant, name, action, filter, from_step, matched)
    SELECT $1, $3, $4, $14, CASE WHEN $15::jsonb IS NULL THEN NULL ELSE
               $15::jsonb || jsonb_strip_nulls(jsonb_build_object('since', bound.since, 'until', bound.until)) END,
           $16, (SELECT count(*) FROM matched)
    FROM bound WHERE NOT $17::boolean
    RETURNING id
), items AS (
    INSERT INTO bulk_action_tasks (bulk_action_id, task_id)
    SELECT $1, matched.id FROM matched, action
    RETURNING 1
)
SELECT (SELECT count(*) FROM matched) AS matched, bound.since, bound.until FROM bound
