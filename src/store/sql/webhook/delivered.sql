-- name: webhook/delivered
-- move: DeliveryMove::Deliver
-- fenced on the try (id, attempts, pending)
UPDATE webhook_deliveries
SET status = 'delivered', delivered_at = now(), leased_until = NULL,
    log = log || jsonb_build_array(jsonb_build_object(
        'at', now(), 'attempt', attempts, 'status', $3::int, 'error', NULL))
WHERE id = $1 AND attempts = $2 AND (status IN ('pending')) IS NOT FALSE
