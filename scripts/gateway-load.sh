#!/usr/bin/env bash
# The gateway's speed against nginx and against the direct call, on loopback, with wrk.
#
#   bash scripts/gateway-load.sh [--duration SECONDS] [--connections N]
#
# Starts, on free loopback ports:
#   upstream  nginx answering GET /pets/{id} with a small JSON body (the API behind both)
#   nginx     nginx forwarding everything to the upstream (proxy_pass, keep-alive upstream)
#   gateway   `halo gateway run` (release) with the upstream's OpenAPI document, a bearer
#             token, and a policy that governs the call: a rate (high enough never to refuse),
#             a timeout and a circuit; every call authenticated and validated
# and drives, one after the other, the same GET through each: the direct call, nginx's, and
# the gateway's. Twice: with --connections keep-alive connections (32) for throughput, and
# with one connection for the latency a call adds. Prints requests per second and latency
# percentiles, the gateway's throughput over nginx's, and the p50 the gateway adds over the
# direct call (one connection).
#
# nginx and wrk are installed from Debian (apt-get) when missing. Client, proxies and
# upstream share the machine's cores: the figures are ratios of one run, not capacities.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/listening.sh
source scripts/options.sh

load_options gateway-load.sh 19 "$@"

missing=()
command -v wrk >/dev/null 2>&1 || missing+=(wrk)
[ -x /usr/sbin/nginx ] || missing+=(nginx-light)
if [ ${#missing[@]} -gt 0 ]; then
  echo "gateway-load.sh: installing ${missing[*]} (Debian packages)" >&2
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

halo=$(release_binary gateway-load.sh halo-cli halo)

work=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}
upstream_port=$(free_port)
nginx_port=$(free_port)
mkdir -p "$work/logs"
cat >"$work/nginx.conf" <<NGINX
worker_processes auto;
daemon off;
pid $work/nginx.pid;
error_log $work/logs/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  upstream pets { server 127.0.0.1:$upstream_port; keepalive 64; }
  server {
    listen 127.0.0.1:$upstream_port;
    location /pets/ { default_type application/json; return 200 '{"id": 1, "name": "Rex", "kind": "dog"}'; }
  }
  server {
    listen 127.0.0.1:$nginx_port;
    location / {
      proxy_pass http://pets;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
    }
  }
}
NGINX
/usr/sbin/nginx -p "$work" -c "$work/nginx.conf" &
pids+=($!)

cat >"$work/pets.json" <<'JSON'
{"openapi": "3.1.0", "info": {"title": "Pets", "version": "1"},
 "paths": {"/pets/{id}": {"get": {"operationId": "get_pet", "summary": "One pet",
   "parameters": [{"name": "id", "in": "path", "required": true, "schema": {"type": "integer", "minimum": 1}}],
   "responses": {"200": {"description": "The pet", "content": {"application/json": {"schema": {"type": "object"}}}}}}}}}
JSON
cat >"$work/gateway.yaml" <<YAML
listen: 127.0.0.1:0
auth: { tokens: { "load-test-token-0123456789": { caller: load } } }
upstreams:
  pets: { openapi: pets.json, base_url: "http://127.0.0.1:$upstream_port" }
policies:
  - match: { upstream: pets }
    set: { rate: 100000000/second, timeout: 5s, circuit: 5/30s/2 }
YAML
RUST_LOG=warn "$halo" gateway run "$work/gateway.yaml" >"$work/gateway.out" 2>"$work/gateway.err" &
pids+=($!)
gateway=$(listening_url "gateway-load.sh: the gateway" "$work/gateway.out" "listening on" \
  "${pids[1]}" "$work/gateway.err")

expect() {
  local url="$1"; shift
  local got
  for _ in $(seq 1 50); do
    got=$(curl -s -o /dev/null -w '%{http_code}' "$@" "$url" || true)
    [ "$got" = 200 ] && return 0
    sleep 0.1
  done
  echo "gateway-load.sh: $url answered $got, not 200" >&2; exit 1
}
direct="http://127.0.0.1:$upstream_port/pets/1"
proxied="http://127.0.0.1:$nginx_port/pets/1"
governed="$gateway/pets/pets/1"
expect "$direct"
expect "$proxied"
expect "$governed" -H 'Authorization: Bearer load-test-token-0123456789'

cat >"$work/plain.lua" <<'LUA'
done = function(summary, latency, requests)
  io.write(string.format("RESULT %d %.6f %d %d %d %d %d\n", summary.requests,
    summary.duration / 1e6, latency:percentile(50), latency:percentile(90),
    latency:percentile(99), summary.errors.status,
    summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout))
end
LUA
{ cat "$work/plain.lua"; echo 'wrk.headers["Authorization"] = "Bearer load-test-token-0123456789"'; } >"$work/token.lua"

run() {
  local name="$1" url="$2" script="$3" conns="$4"
  echo "gateway-load.sh: $name, ${duration}s, $conns connection(s)" >&2
  wrk -t1 -c"$conns" -d"${duration}s" --latency -s "$work/$script.lua" "$url" >"$work/$name.out"
  printf '%s %s ' "$name" "$conns"
  sed -n 's/^RESULT //p' "$work/$name.out"
}
{
  run direct "$direct" plain "$connections"
  run nginx "$proxied" plain "$connections"
  run gateway "$governed" token "$connections"
  run direct-1 "$direct" plain 1
  run nginx-1 "$proxied" plain 1
  run gateway-1 "$governed" token 1
} >"$work/results"

echo
echo "wrk: 1 thread, ${duration}s per target; upstream and nginx: nginx $(/usr/sbin/nginx -v 2>&1 | sed 's/.*nginx\///'), $(nproc) workers;"
echo "halo gateway (release): a governed GET (bearer token, validation, rate, timeout, circuit);"
echo "everything shares this machine's $(nproc) cores."
echo
awk '
  function us(v) { return sprintf("%d", v) }
  {
    name = $1; rps = $3 / $4; p50[name] = $5; tput[name] = rps
    row[NR] = sprintf("| %-9s | %3d | %9.0f | %6s | %6s | %7s | %s |", name, $2, rps,
      us($5), us($6), us($7), ($8 + $9 > 0 ? ($8 " non-2xx, " $9 " socket errors") : "all 200"))
  }
  END {
    print "| target    | connections | req/s | p50 µs | p90 µs | p99 µs | answers |"
    print "|---|---:|---:|---:|---:|---:|---|"
    for (i = 1; i <= NR; i++) print row[i]
    printf "\ngateway req/s ÷ nginx req/s (%s connections): %.2f\n", "many", tput["gateway"] / tput["nginx"]
    printf "p50 the gateway adds to the direct call (one connection): %d µs (nginx adds %d µs)\n",
      p50["gateway-1"] - p50["direct-1"], p50["nginx-1"] - p50["direct-1"]
  }' "$work/results"
