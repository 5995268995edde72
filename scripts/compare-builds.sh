#!/usr/bin/env bash
# A governed call's time in this tree against an earlier commit's build of the layer.
#
#   bash scripts/compare-builds.sh [COMMIT] [--runs N] [--patch FILE]
#
# COMMIT defaults to ac9cda7, the last commit before circuit breakers, approvals and
# cancellation (issue 16). The earlier commit is exported with `git archive` into
# target/compare/old and built into target/compare/old-target, a target directory of its own:
# two trees built into one target directory can leave cargo using the wrong build of a
# workspace crate. Both builds run halo-axum/benches/governed.rs (the old one without its
# `circuit = …` key, which that layer did not know) and the timing it shares with the other
# benches (benches/support/mod.rs), alternately, N times each (3 by default), on a machine
# that should be quiet. The script prints each run's figures and the medians'
# ratios, new / old, and first the instructions one in-process call takes in each build
# (valgrind's cachegrind, when valgrind is installed), a count the machine's noise barely
# moves.
#
# --patch FILE applies FILE (`patch -p1` in the exported tree) to the earlier commit before it
# is built: a change made since to code both builds run, backported, so that the ratio counts
# only what differs. scripts/compare/ac9cda7-rate-header.patch backports the `RateLimit`
# header written without `format!` (1,200 instructions a call cheaper).
set -euo pipefail
cd "$(dirname "$0")/.."

commit=ac9cda7
runs=3
patch_file=
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) runs="${2:?--runs needs a number}"; shift 2 ;;
    --patch) patch_file="$(realpath "${2:?--patch needs a file}")"; shift 2 ;;
    -*) echo "unknown option $1" >&2; exit 2 ;;
    *) commit="$1"; shift ;;
  esac
done

root="$PWD"
work="$root/target/compare"
old="$work/old"
rm -rf "$old"
mkdir -p "$old"
git archive "$commit" | tar -x -C "$old"
sed 's/, circuit = "5\/30s\/2"//' halo-axum/benches/governed.rs > "$old/halo-axum/benches/governed.rs"
cp halo-axum/benches/support/mod.rs "$old/halo-axum/benches/support/mod.rs"
if [ -n "$patch_file" ]; then
  (cd "$old" && patch -s -p1 < "$patch_file")
fi
if ! grep -q 'name = "governed"' "$old/halo-axum/Cargo.toml"; then
  printf '\n[[bench]]\nname = "governed"\nharness = false\n' >> "$old/halo-axum/Cargo.toml"
fi

echo "building $commit's layer into $work/old-target" >&2
(cd "$old" && CARGO_TARGET_DIR="$work/old-target" cargo bench -p halo-axum --bench governed --no-run)
echo "building this tree's layer" >&2
cargo bench -p halo-axum --bench governed --no-run
# The newest build of each bench binary.
newest() { ls -t "$1"/release/deps/governed-* | grep -v '\.d$' | head -1; }
old_bin=$(newest "$work/old-target")
new_bin=$(newest target)

# Instructions per in-process call, counted by valgrind's cachegrind (this VM has no hardware
# counters for perf): the count of 52,000 calls less that of 2,000, over 50,000, five times,
# the median (the runs differ by about 0.5%; the allocator's and the timer wheel's paths vary).
count() {
  HALO_BENCH_CALLS="$2" valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null "$1" 2>&1 >/dev/null \
    | awk '/I *refs/ { gsub(",", "", $NF); print $NF }'
}
per_call() {
  local small large
  for _ in 1 2 3 4 5; do
    small=$(count "$1" 2000)
    large=$(count "$1" 52000)
    awk -v s="$small" -v l="$large" 'BEGIN { printf "%.0f\n", (l - s) / 50000 }'
  done | sort -n | sed -n 3p
}
if command -v valgrind >/dev/null 2>&1; then
  old_ins=$(per_call "$old_bin"); new_ins=$(per_call "$new_bin")
  echo "instructions per governed GET, in process: new $new_ins, $commit $old_ins: new / $commit = $(awk -v a="$new_ins" -v b="$old_ins" 'BEGIN { printf "%.3f", a / b }')"
else
  echo "valgrind is missing (apt-get install valgrind): no instruction counts" >&2
fi

# Criterion's point estimate of one bench, in nanoseconds, from its text output.
estimate() {
  awk -v id="$1" '
    $0 ~ "^" id { found = 1 }
    found && /time:/ {
      sub(/.*\[/, ""); split($0, f, " ");
      value = f[3]; unit = f[4];
      if (unit == "ps") value /= 1000; else if (unit == "µs" || unit == "us") value *= 1000; else if (unit == "ms") value *= 1000000;
      print value; exit
    }'
}

declare -a old_one old_http new_one new_http
for run in $(seq 1 "$runs"); do
  out=$(cd "$old" && CARGO_TARGET_DIR="$work/old-target" cargo bench -q -p halo-axum --bench governed 2>/dev/null)
  old_one+=("$(estimate governed/oneshot_get <<<"$out")")
  old_http+=("$(estimate governed/http_get <<<"$out")")
  out=$(cargo bench -q -p halo-axum --bench governed 2>/dev/null)
  new_one+=("$(estimate governed/oneshot_get <<<"$out")")
  new_http+=("$(estimate governed/http_get <<<"$out")")
  echo "run $run: oneshot old ${old_one[-1]} ns, new ${new_one[-1]} ns; http old ${old_http[-1]} ns, new ${new_http[-1]} ns"
done

median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a / b }'; }
m_old_one=$(median "${old_one[@]}"); m_new_one=$(median "${new_one[@]}")
m_old_http=$(median "${old_http[@]}"); m_new_http=$(median "${new_http[@]}")
echo "governed GET, in process: new / $commit = $(ratio "$m_new_one" "$m_old_one") (medians $m_new_one ns / $m_old_one ns)"
echo "governed GET, over HTTP:  new / $commit = $(ratio "$m_new_http" "$m_old_http") (medians $m_new_http ns / $m_old_http ns)"
