-- name: cost/put_price
INSERT INTO model_prices (model, valid_from, input_per_mtok, output_per_mtok, cached_input_per_mtok)
VALUES ($1, coalesce($2, now()), $3::float8, $4::float8, $5::float8)
ON CONFLICT (model, valid_from) DO UPDATE SET input_per_mtok = excluded.input_per_mtok,
    output_per_mtok = excluded.output_per_mtok,
    cached_input_per_mtok = excluded.cached_input_per_mtok, updated_at = now()
RETURNING model, valid_from, input_per_mtok::float8, output_per_mtok::float8,
          cached_input_per_mtok::float8, updated_at
