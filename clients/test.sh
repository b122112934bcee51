#!/usr/bin/env bash
# Run both clients' own test suites (pytest, node's test runner) against a real
# `trellis-api --dev` (throwaway PostgreSQL, its in-process worker, access control on).
set -euo pipefail
cd "$(dirname "$0")/.."

cargo build -q -p trellis-api
KEY="clients-test-admin-key-$(date +%s%N)"
LOG="$(mktemp)"
# every answer the clients get is checked against the served OpenAPI document; the mismatches
# land here, and any one fails this script at the end
DIFFER="$(mktemp)"
APP_AUTH__BOOTSTRAP_ADMIN_KEY="$KEY" APP_SERVER__HOST=127.0.0.1 APP_SERVER__PORT=0 \
  APP_DEBUG__CHECK_ANSWERS_FILE="$DIFFER" \
  RUST_LOG=warn target/debug/trellis-api --dev >"$LOG" 2>&1 &
PID=$!
trap 'kill -INT $PID 2>/dev/null || true; wait $PID 2>/dev/null || true; rm -f "$LOG"' EXIT
URL=""
for _ in $(seq 1 1200); do
  URL="$(sed -n 's/^listening on \(http:[^ ]*\).*/\1/p' "$LOG" | head -1)"
  [ -n "$URL" ] && break
  kill -0 "$PID" 2>/dev/null || { echo "trellis-api exited:" >&2; cat "$LOG" >&2; exit 1; }
  sleep 0.1
done
[ -n "$URL" ] || { echo "trellis-api did not start" >&2; cat "$LOG" >&2; exit 1; }
export TRELLIS_URL="$URL" TRELLIS_API_KEY="$KEY"

# an MCP server of the official Python SDK (tests/mcp, made by test.sh), registered so that
# both suites read a tool list holding an MCP tool
MCP_PY=tests/mcp/.venv/bin/python
if [ -x "$MCP_PY" ]; then
  MCP_KEY="clients-mcp-$(date +%s%N)"
  MCP_PORT="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
  "$MCP_PY" tests/mcp/server.py "$MCP_PORT" "$MCP_KEY" >/dev/null 2>&1 &
  MCP_PID=$!
  trap 'kill -INT $PID 2>/dev/null || true; kill $MCP_PID 2>/dev/null || true; wait $PID 2>/dev/null || true; rm -f "$LOG"' EXIT
  for _ in $(seq 1 300); do
    (echo >"/dev/tcp/127.0.0.1/$MCP_PORT") 2>/dev/null && break
    sleep 0.1
  done
  python3 - "$URL" "$KEY" "$MCP_PORT" "$MCP_KEY" <<'PY'
import json, sys, urllib.request
url, key, port, mcp_key = sys.argv[1:5]
body = {"id": "cmcp", "endpoint": f"http://127.0.0.1:{port}/mcp", "headers": {"X-Api-Key": mcp_key}}
req = urllib.request.Request(f"{url}/api/v1/mcp-servers", data=json.dumps(body).encode(), method="POST",
                             headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"})
with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(req, timeout=30) as r:
    assert r.status == 201, r.status
PY
  export TRELLIS_MCP_TOOL=cmcp.add
fi

echo "== clients/python: pytest against $URL"
VENV=clients/python/.venv
if [ ! -x "$VENV/bin/pytest" ]; then
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q -r clients/python/requirements-dev.txt
fi
"$VENV/bin/pip" install -q -e clients/python
(cd clients/python && .venv/bin/pytest -q)

echo "== clients/typescript: node --test against $URL"
[ -d clients/typescript/node_modules ] || npm ci --prefix clients/typescript --no-audit --no-fund
npm test --prefix clients/typescript

if [ -s "$DIFFER" ]; then
  echo "trellis-api gave answers that differ from its OpenAPI document:" >&2
  cat "$DIFFER" >&2
  exit 1
fi
rm -f "$DIFFER"
