-- name: testing/fingerprint_counts
SELECT (SELECT count(*) FROM attempts),
(SELECT count(*) FROM attempts WHERE status = 'succeeded'),
(SELECT count(*) FROM steps s WHERE (SELECT count(*) FROM attempts a
    WHERE a.step_id = s.id AND a.status = 'succeeded') <> 1),
(SELECT coalesce(max(lease_token), 0) FROM steps)
