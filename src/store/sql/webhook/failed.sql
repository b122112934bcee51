-- name: webhook/failed
-- move: DeliveryMove::GiveUp
-- a try failed, fenced on the try (id, attempts, pending): dead after the last try, else
-- pending again after its backoff
UPDATE webhook_deliveries
SET status = CASE WHEN attempts >= $5 THEN 'dead' ELSE status END,
    next_attempt_at = now() + make_interval(secs => $6), leased_until = NULL,
    log = log || jsonb_build_array(jsonb_build_object(
        'at', now(), 'attempt', attempts, 'status', $3::int, 'error', $4::text))
WHERE id = $1 AND attempts = $2 AND (status IN ('pending')) IS NOT FALSE
