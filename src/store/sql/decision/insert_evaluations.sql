-- name: decision/insert_evaluations
WITH e AS (
    INSERT INTO evaluations (task_id, round, plan_version, overall_score, completeness,
            correctness, efficiency, reliability, is_successful, successes, failures,
            improvement_suggestions, raw)
    SELECT * FROM unnest($1::uuid[], $2::int[], $3::int[], $4::float8[], $5::float8[],
                         $6::float8[], $7::float8[], $8::float8[], $9::bool[],
                         $10::jsonb[], $11::jsonb[], $12::jsonb[], $13::text[])
    RETURNING task_id, overall_score)
UPDATE tasks t SET final_score = e.overall_score FROM e
WHERE t.id = e.task_id AND t.id = ANY($14)
