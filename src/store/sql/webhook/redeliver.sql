-- name: webhook/redeliver
-- move: DeliveryMove::Redeliver
-- a delivered or dead delivery goes out again, its tries counted afresh (its log kept)
UPDATE webhook_deliveries
SET status = 'pending', attempts = 0, next_attempt_at = now(), leased_until = NULL, delivered_at = NULL
WHERE id = $1 AND webhook_id = $2 AND (status IN ('delivered', 'dead')) IS NOT FALSE
RETURNING id
