# Sourced by the load scripts (scripts/load.sh, scripts/gateway-load.sh): waiting for a
# server they started to say where it listens.

# listening_url WHAT OUT PREFIX PID ERR: the http URL that the server WHAT (a process PID
# writing to the file OUT, its errors to ERR) prints on a line starting with PREFIX, as in
# "listening on http://127.0.0.1:PORT". Polls for 20 seconds; exits (with the server's
# errors) if the server stops first, or when the time is up.
listening_url() {
  local what="$1" out="$2" prefix="$3" pid="$4" err="$5" url=""
  for _ in $(seq 1 200); do
    url=$(sed -n "s/^$prefix \(http:[^ ]*\).*/\1/p" "$out")
    [ -n "$url" ] && { echo "$url"; return 0; }
    kill -0 "$pid" 2>/dev/null || { cat "$err" >&2; exit 1; }
    sleep 0.1
  done
  echo "$what did not start" >&2
  exit 1
}
