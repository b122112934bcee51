-- name: tenant/delete
DELETE FROM tenants WHERE tenant = $1
