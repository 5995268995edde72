#!/usr/bin/env bash
# Three bookstore replicas behind HAProxy against one bookstore straight, on a Redis Cluster.
#
#   bash scripts/replicas-load.sh [--duration SECONDS] [--connections N] [--rounds N]
#
# Builds the release bookstore; starts a three-node Redis Cluster (redis-server, on loopback
# ports, in a temporary folder), four bookstores with --redis-cluster, and HAProxy (round
# robin, no stickiness) in front of three of them. Then drives GET /api/books/1 (a tool: caller
# identified, path validated, handler) with wrk, alternately straight at the fourth bookstore
# and through HAProxy, --rounds times each (2) for --duration seconds (10) over --connections
# keep-alive connections (32) from one wrk thread, and prints requests per second and p99 of
# each run and the medians' ratios (replicas / straight).
#
# wrk and haproxy are installed from Debian when missing. Client, proxy, replicas and Redis
# share this machine's cores: the figures say what the proxy hop and the sharing cost here,
# not what three machines would serve.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/options.sh

rounds=2
load_options replicas-load.sh 17 "$@"

for package in wrk haproxy; do
  if ! command -v "$package" >/dev/null 2>&1 && [ ! -x "/usr/sbin/$package" ]; then
    echo "replicas-load.sh: installing $package (Debian package)" >&2
    sudo=""
    [ "$(id -u)" -ne 0 ] && sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "$package" >/dev/null
  fi
done
haproxy=$(command -v haproxy || echo /usr/sbin/haproxy)
for tool in redis-server redis-cli curl awk; do
  command -v "$tool" >/dev/null 2>&1 || { echo "replicas-load.sh: $tool is needed" >&2; exit 1; }
done

bin=$(release_binary replicas-load.sh bookstore bookstore)

work=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

# A free loopback port whose cluster bus port (+10000) is free too.
free_port() {
  python3 - <<'PY'
import socket
while True:
    s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]; s.close()
    if port < 55535:
        b = socket.socket()
        try:
            b.bind(("127.0.0.1", port + 10000)); b.close(); print(port); break
        except OSError:
            b.close()
PY
}

nodes=()
for i in 0 1 2; do
  port=$(free_port)
  mkdir -p "$work/redis-$i"
  redis-server --bind 127.0.0.1 --port "$port" --dir "$work/redis-$i" --save "" \
    --appendonly no --cluster-enabled yes --cluster-config-file nodes.conf \
    --daemonize no --logfile redis.log &
  pids+=($!)
  nodes+=("127.0.0.1:$port")
done
for node in "${nodes[@]}"; do
  for _ in $(seq 1 100); do
    redis-cli -h 127.0.0.1 -p "${node#*:}" ping >/dev/null 2>&1 && break
    sleep 0.1
  done
done
redis-cli --cluster create "${nodes[@]}" --cluster-replicas 0 --cluster-yes >/dev/null
for _ in $(seq 1 100); do
  redis-cli -p "${nodes[0]#*:}" cluster info | grep -q 'cluster_state:ok' && break
  sleep 0.1
done
cluster=$(printf 'redis://%s,' "${nodes[@]}")
cluster=${cluster%,}

start_bookstore() {
  local name="$1"
  RUST_LOG=warn "$bin" --addr 127.0.0.1:0 --redis-cluster "$cluster" \
    >"$work/$name.out" 2>"$work/$name.err" &
  pids+=($!)
  local base=""
  for _ in $(seq 1 100); do
    base=$(sed -n 's/^bookstore listening on http:\/\/\([^ ]*\).*/\1/p' "$work/$name.out")
    [ -n "$base" ] && break
    sleep 0.1
  done
  [ -n "$base" ] || { cat "$work/$name.err" >&2; echo "replicas-load.sh: $name did not start" >&2; exit 1; }
  echo "$base"
}
straight=$(start_bookstore straight)
backends=()
for i in 0 1 2; do backends+=("$(start_bookstore "r$i")"); done

proxy_port=$(free_port)
{
  printf 'global\n  maxconn 4096\ndefaults\n  mode http\n  timeout connect 2s\n'
  printf '  timeout client 60s\n  timeout server 60s\n'
  printf 'frontend front\n  bind 127.0.0.1:%s\n  default_backend replicas\n' "$proxy_port"
  printf 'backend replicas\n  balance roundrobin\n'
  for i in 0 1 2; do printf '  server r%s %s\n' "$i" "${backends[$i]}"; done
} >"$work/haproxy.cfg"
"$haproxy" -db -f "$work/haproxy.cfg" >"$work/haproxy.out" 2>&1 &
pids+=($!)
for _ in $(seq 1 100); do
  curl -s -o /dev/null "http://127.0.0.1:$proxy_port/health" && break
  sleep 0.1
done

for base in "$straight" "127.0.0.1:$proxy_port"; do
  got=$(curl -s -o /dev/null -w '%{http_code}' "http://$base/api/books/1")
  [ "$got" = 200 ] || { echo "replicas-load.sh: GET http://$base/api/books/1 answered $got" >&2; exit 1; }
done

cat >"$work/result.lua" <<'LUA'
done = function(summary, latency, requests)
  io.write(string.format("RESULT %.1f %d %d\n", summary.requests / (summary.duration / 1e6),
    latency:percentile(99), summary.errors.status))
end
LUA
run() {
  local name="$1" base="$2"
  echo "replicas-load.sh: $name, ${duration}s, $connections connections" >&2
  printf '%s ' "$name"
  wrk -t1 -c"$connections" -d"${duration}s" --latency -s "$work/result.lua" \
    "http://$base/api/books/1" | sed -n 's/^RESULT //p'
}
{
  for _ in $(seq 1 "$rounds"); do
    run straight "$straight"
    run replicas "127.0.0.1:$proxy_port"
  done
} >"$work/results"

echo
echo "GET /api/books/1, release bookstores on a three-node Redis Cluster; wrk: 1 thread,"
echo "$connections connections, ${duration}s per run, $rounds runs each, alternated; all on this"
echo "machine's $(nproc) cores."
echo
awk '
  function median(list, n,   i, j, t) {
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (list[j] < list[i]) { t = list[i]; list[i] = list[j]; list[j] = t }
    return n % 2 ? list[(n + 1) / 2] : (list[n / 2] + list[n / 2 + 1]) / 2
  }
  {
    printf "| %-8s | %9.0f req/s | p99 %7.3f ms | non-2xx %d |\n", $1, $2, $3 / 1000, $4
    if ($1 == "straight") { s++; srps[s] = $2; sp99[s] = $3 } else { r++; rrps[r] = $2; rp99[r] = $3 }
  }
  END {
    printf "\nreplicas / straight, medians: throughput %.2f, p99 %.2f\n",
      median(rrps, r) / median(srps, s), median(rp99, r) / median(sp99, s)
  }' "$work/results"
