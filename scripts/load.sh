#!/usr/bin/env bash
# Load test of the release bookstore on loopback, with wrk.
#
#   bash scripts/load.sh [--duration SECONDS] [--connections N] [--metrics]
#
# Builds `bookstore` in release mode, starts it on a free loopback port, and drives four
# targets one after the other, each for --duration seconds (10 by default) over --connections
# keep-alive connections (32) from one wrk thread:
#
#   baseline  GET /health: a route HALO does not describe (the layer only looks the path up)
#   manifest  OPTIONS / with Accept: application/llm+json (the manifest, anonymous)
#   get_tool  GET /api/books/1 (a public tool: caller identified, path validated, handler)
#   mcp_call  the same tool over MCP: POST /mcp, `tools/call` of get_book with {"id": 1}
#             (stateless streamable HTTP, a JSON answer), in process through the layer
#   charge    POST /api/payments/charge as demo-admin (rate 5/minute: after the first five
#             calls every answer is 429, after authentication and body validation)
#
# For each: requests per second, latency p50/p90/p99, the answers' statuses, and throughput
# and p50 as ratios to the baseline of the same run, and mcp_call's throughput against
# get_tool's (the same tool, the same run). With --metrics the bookstore runs with
# --metrics (a Prometheus recorder, GET /metrics) and the tool counters are printed at the end.
#
# wrk is installed from Debian (apt-get) when missing. Client and server share the machine's
# cores, so the figures are a floor for the server, not its capacity.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/options.sh
source scripts/listening.sh

metrics=0
args=()
for arg in "$@"; do
  if [ "$arg" = --metrics ]; then metrics=1; else args+=("$arg"); fi
done
load_options load.sh 22 ${args[@]+"${args[@]}"}

if ! command -v wrk >/dev/null 2>&1; then
  echo "load.sh: installing wrk (Debian package)" >&2
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq wrk >/dev/null
fi
for tool in curl awk; do
  command -v "$tool" >/dev/null 2>&1 || { echo "load.sh: $tool is needed" >&2; exit 1; }
done

bin=$(release_binary load.sh bookstore bookstore)

work=$(mktemp -d)
server=""
cleanup() {
  if [ -n "$server" ]; then
    kill "$server" 2>/dev/null || true
    wait "$server" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

args=(--addr 127.0.0.1:0)
[ "$metrics" = 1 ] && args+=(--metrics)
RUST_LOG=warn "$bin" "${args[@]}" >"$work/server.out" 2>"$work/server.err" &
server=$!
base=$(listening_url "load.sh: the bookstore" "$work/server.out" "bookstore listening on" \
  "$server" "$work/server.err")

# Every target answers as expected before it is measured.
expect() {
  local want="$1"; shift
  local got
  got=$(curl -s -o /dev/null -w '%{http_code}' "$@")
  [ "$got" = "$want" ] || { echo "load.sh: $* answered $got, not $want" >&2; exit 1; }
}
expect 200 "$base/health"
expect 200 -X OPTIONS -H 'Accept: application/llm+json' "$base/"
expect 200 "$base/api/books/1"
mcp_call='{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_book","arguments":{"id":1}}}'
mcp_headers=(-H 'Accept: application/json, text/event-stream' -H 'Content-Type: application/json'
  -H 'MCP-Protocol-Version: 2025-06-18')
answer=$(curl -s -X POST "${mcp_headers[@]}" -d "$mcp_call" "$base/mcp")
case "$answer" in
  *'"isError":false'*'"id":1'*|*'"id":1'*'"isError":false'*) ;;
  *) echo "load.sh: tools/call of get_book over /mcp answered $answer" >&2; exit 1 ;;
esac

# One Lua file per target: the request, and a summary line wrk prints at the end.
cat >"$work/common.lua" <<'LUA'
threads = {}
setup = function(thread) table.insert(threads, thread) end
local codes = {200, 201, 204, 304, 400, 401, 403, 404, 409, 415, 422, 429, 500, 503, 504}
done = function(summary, latency, requests)
  local statuses = {}
  for _, code in ipairs(codes) do
    local n = 0
    for _, thread in ipairs(threads) do n = n + (tonumber(thread:get("s" .. code)) or 0) end
    if n > 0 then table.insert(statuses, code .. ":" .. n) end
  end
  local e = summary.errors
  io.write(string.format("RESULT %d %.6f %d %d %d %d %d %s\n", summary.requests,
    summary.duration / 1e6, latency:percentile(50), latency:percentile(90),
    latency:percentile(99), e.status, e.connect + e.read + e.write + e.timeout,
    #statuses > 0 and table.concat(statuses, ",") or "-"))
end
LUA
counting='
response = function(status, headers, body)
  local key = "s" .. status
  _G[key] = (_G[key] or 0) + 1
end'
{ cat "$work/common.lua"; echo 'wrk.method = "GET"'; } >"$work/baseline.lua"
{ cat "$work/common.lua"; echo 'wrk.method = "OPTIONS"'
  echo 'wrk.headers["Accept"] = "application/llm+json"'; } >"$work/manifest.lua"
{ cat "$work/common.lua"; echo 'wrk.method = "GET"'; } >"$work/get_tool.lua"
{ cat "$work/common.lua"; echo 'wrk.method = "POST"'
  echo 'wrk.headers["Authorization"] = "Bearer demo-admin"'
  echo 'wrk.headers["Content-Type"] = "application/json"'
  echo 'wrk.body = [[{"order_id": 1001, "amount": 21.98, "currency": "EUR", "payment_method": "pm_card_visa"}]]'
  echo "$counting"; } >"$work/charge.lua"
{ cat "$work/common.lua"; echo 'wrk.method = "POST"'
  echo 'wrk.headers["Accept"] = "application/json, text/event-stream"'
  echo 'wrk.headers["Content-Type"] = "application/json"'
  echo 'wrk.headers["MCP-Protocol-Version"] = "2025-06-18"'
  echo "wrk.body = [[$mcp_call]]"
  echo "$counting"; } >"$work/mcp_call.lua"

run() {
  local name="$1" path="$2"
  echo "load.sh: $name ($path), ${duration}s, $connections connections" >&2
  wrk -t1 -c"$connections" -d"${duration}s" --latency -s "$work/$name.lua" "$base$path" \
    >"$work/$name.out"
  printf '%s %s ' "$name" "$path"
  sed -n 's/^RESULT //p' "$work/$name.out"
}
{
  run baseline /health
  run manifest /
  run get_tool /api/books/1
  run charge /api/payments/charge
  run mcp_call /mcp
} >"$work/results"

echo
echo "bookstore (release) on $base; wrk: 1 thread, $connections connections, ${duration}s per target;"
echo "client and server share this machine's $(nproc) cores."
echo
awk '
  function ms(us) { return sprintf("%.3f", us / 1000) }
  {
    name = $1; path = $2; rps = $3 / $4
    if (name == "baseline") { base_rps = rps; base_p50 = $5 }
    if (name == "get_tool") tool_rps = rps
    if (name == "mcp_call") mcp_rps = rps
    row[NR] = sprintf("| %-8s | %-27s | %9.0f | %8s | %8s | %8s | %5.2f | %5.2f | %s |",
      name, path, rps, ms($5), ms($6), ms($7), rps / base_rps, $5 / base_p50,
      ($10 == "-" ? ($8 > 0 ? $8 " non-2xx/3xx" : "all 2xx/3xx") : $10))
    if ($9 > 0) row[NR] = row[NR] " (" $9 " socket errors)"
  }
  END {
    print "| target   | request                     |   req/s   | p50 ms   | p90 ms   | p99 ms   | req/s ÷ baseline | p50 ÷ baseline | statuses |"
    print "|---|---|---:|---:|---:|---:|---:|---:|---|"
    for (i = 1; i <= NR; i++) print row[i]
    printf "\nmcp_call / get_tool, throughput: %.2f\n", mcp_rps / tool_rps
  }' "$work/results"

if [ "$metrics" = 1 ]; then
  echo
  echo "GET /metrics, the tool counters:"
  curl -s -H 'Authorization: Bearer demo-admin' "$base/metrics" | grep '^halo_tool_calls_total' || true
fi
