-- name: testing/history_tasks
INSERT INTO tasks (id, description, status, plan_version, max_step_retries,
    max_single_step_repairs, max_task_replans, max_consecutive_failures,
    max_reflection_rounds, max_concurrent_steps, final_score, event_seq,
    created_at, updated_at, finished_at)
SELECT gen_random_uuid(), 'history ' || i, 'succeeded', 1, 3, 1, 1, 3, 5, 8, 100, 2,
       now() - interval '1 day', now() - interval '1 day', now() - interval '1 day'
FROM generate_series(1, $1) AS i
