#!/usr/bin/env bash
# Regenerate both clients from the OpenAPI document (docs/openapi.json, which a test keeps equal
# to what the handlers' types generate): the Python package's `generated` module with
# openapi-python-client, the TypeScript types with openapi-typescript. The tools are pinned and
# installed here (a venv under clients/python/.venv, node_modules under clients/typescript).
# CI runs this and fails when the committed clients differ (`git diff --exit-code clients`).
set -euo pipefail
cd "$(dirname "$0")"
DOC="$(pwd)/../docs/openapi.json"

# Python
VENV=python/.venv
if [ ! -x "$VENV/bin/openapi-python-client" ]; then
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q -r python/requirements-dev.txt
fi
rm -rf python/trellis_client/generated
PATH="$(pwd)/$VENV/bin:$PATH" "$VENV/bin/openapi-python-client" generate --path "$DOC" \
  --output-path python/trellis_client/generated --meta none --config python/generator.yaml >/dev/null
rm -rf python/trellis_client/generated/.ruff_cache

# TypeScript
if [ ! -x typescript/node_modules/.bin/openapi-typescript ]; then
  npm ci --prefix typescript --no-audit --no-fund >/dev/null
fi
(cd typescript && node_modules/.bin/openapi-typescript "$DOC" -o src/schema.ts >/dev/null)
echo "clients regenerated from docs/openapi.json"
