-- name: testing/running_index_disagreements
-- steps running without a running_steps row, plus rows whose step is not running (one
-- snapshot: 0 at any instant, since both change in the same transaction)
SELECT (SELECT count(*) FROM (SELECT id, task_id FROM steps WHERE status = 'running'
                              EXCEPT SELECT step_id, task_id FROM running_steps) a)
     + (SELECT count(*) FROM (SELECT step_id, task_id FROM running_steps
                              EXCEPT SELECT id, task_id FROM steps WHERE status = 'running') b)
