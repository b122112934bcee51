#!/usr/bin/env bash
# Every test, on a fresh Debian machine too: installs what is missing (PostgreSQL's server
# binaries, PgBouncer for the pooler tests, Chromium and Node for the dashboard's browser test,
# python3-venv for the Python client), then runs `cargo test --workspace` (each test on a fresh database: on DATABASE_URL if
# set, else on a throwaway cluster from the local PostgreSQL binaries), checks that the
# committed clients are what the OpenAPI document generates, and runs both clients' own suites
# against a real `trellis-api --dev`. Installing needs root (or sudo); what is present is left
# alone.
set -euo pipefail
cd "$(dirname "$0")"

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
missing=()
have_pg_server() {
  local d
  for d in "$(pg_config --bindir 2>/dev/null || true)" /usr/lib/postgresql/*/bin; do
    [ -n "$d" ] && [ -x "$d/initdb" ] && [ -x "$d/postgres" ] && return 0
  done
  return 1
}
have_pg_server || missing+=(postgresql postgresql-contrib)
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
# PgBouncer (Debian's 1.18): the pooler tests run the processes through it in transaction mode
[ -x /usr/sbin/pgbouncer ] || command -v pgbouncer >/dev/null 2>&1 || missing+=(pgbouncer)
command -v npm >/dev/null 2>&1 || missing+=(nodejs npm)
command -v python3 >/dev/null 2>&1 || missing+=(python3)
python3 -c 'import ensurepip' >/dev/null 2>&1 || missing+=(python3-venv)
if [ ${#missing[@]} -gt 0 ]; then
  echo "== installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -q
  $SUDO apt-get install -y -q "${missing[@]}"
fi
have_pg_server || { echo "PostgreSQL server binaries still missing" >&2; exit 1; }

echo "== npm ci (tests/dashboard: playwright-core, which drives Debian's chromium)"
npm ci --prefix tests/dashboard --no-audit --no-fund

echo "== the official MCP Python SDK (tests/mcp/.venv) for the MCP tests"
if [ ! -x tests/mcp/.venv/bin/python ] || ! tests/mcp/.venv/bin/python -c 'import mcp' 2>/dev/null; then
  python3 -m venv tests/mcp/.venv
  tests/mcp/.venv/bin/pip install -q -r tests/mcp/requirements.txt
fi

echo "== cargo test --workspace"
cargo test --workspace

echo "== the committed clients are what docs/openapi.json generates"
bash clients/generate.sh
git diff --exit-code --stat -- clients || {
  echo "the clients are stale: run clients/generate.sh and commit the result" >&2
  exit 1
}

echo "== the clients' own suites against trellis-api --dev"
bash clients/test.sh
