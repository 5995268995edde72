#!/usr/bin/env python3
"""Ratios of the halo-client benchmarks, read from criterion's `new/estimates.json` files.

    cargo bench -p halo-client --bench client -- --warm-up-time 1 --measurement-time 4
    cargo bench -p halo-client --features rig --bench rig -- --warm-up-time 1 --measurement-time 4
    python3 halo-client/benches/ratios.py [CRITERION_DIR]

CRITERION_DIR defaults to `$CARGO_TARGET_DIR/criterion`, else the workspace's
`target/criterion`. Figures without results are skipped. Exits 1 when a ratio with a target
misses it.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
from criterion_estimates import criterion_dir, estimates  # noqa: E402

# (what, candidate, baseline, target): both measured separately, one after the other.
SEPARATE = [
    ("invoke GET: halo-client / reqwest", "invoke_get/halo_client", "invoke_get/reqwest", None),
    ("invoke GET: configured reqwest / reqwest", "invoke_get/reqwest_configured",
     "invoke_get/reqwest", None),
    ("describe_all 50 paths: concurrency 8 / sequential", "describe_all_50/concurrent_8",
     "describe_all_50/sequential", None),
]

# (what, benchmark, target): measured alternating; criterion's mean in µs is the ratio.
PAIRED = [
    ("control: reqwest / reqwest (1.00 when sound)", "invoke_paired/reqwest_over_reqwest", None),
    ("invoke GET, no total timeout on either side: halo-client / reqwest",
     "invoke_paired/untimed_over_reqwest", 1.05),
    ("invoke GET, halo-client's default 30 s timeout / reqwest without one",
     "invoke_paired/invoke_over_reqwest", None),
    ("call GET (schema in hand): halo-client / reqwest", "invoke_paired/call_over_reqwest", None),
    ("configured reqwest / reqwest", "invoke_paired/configured_over_reqwest", None),
    # benches/rig.rs (feature `rig`)
    ("control: invoke / invoke (1.00 when sound)", "rig_paired/invoke_over_invoke", None),
    ("rig tool call / halo-client invoke", "rig_paired/rig_over_invoke", 1.05),
    ("rig tool call / halo-client call (schema in hand)", "rig_paired/rig_over_call", None),
    ("bare rig DynamicTool around call / call (rig's dispatch)", "rig_paired/bare_rig_over_call",
     None),
]

# (what, benchmark): plain times.
TIMES = [
    ("describe from the cache", "invoke_parts/describe_cached"),
    ("describe_all 50 paths, concurrency 8", "describe_all_50/concurrent_8"),
    ("50 describes one after another", "describe_all_50/sequential"),
]


def mean_ns(root: Path, bench: str):
    found = estimates(root, bench)
    return None if found is None else found["mean"]


def show(ns: float) -> str:
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("µs", 1e3)):
        if ns >= scale:
            return f"{ns / scale:.3f} {unit}"
    return f"{ns:.1f} ns"


def verdict(ratio: float, target) -> str:
    if target is None:
        return ""
    return f"  (target ≤ {target:.2f}: {'met' if ratio <= target else 'MISSED'})"


def main() -> int:
    root = criterion_dir()
    missed = False
    print(f"criterion results in {root}\n")
    print("separate measurements (candidate / baseline, means):")
    for what, candidate, baseline, target in SEPARATE:
        a, b = mean_ns(root, candidate), mean_ns(root, baseline)
        if a is None or b is None:
            continue
        ratio = a / b
        missed |= target is not None and ratio > target
        print(f"  {what:<52} {ratio:6.3f}  ({show(a)} / {show(b)}){verdict(ratio, target)}")
    print("\npaired measurements (ratio):")
    for what, bench, target in PAIRED:
        ns = mean_ns(root, bench)
        if ns is None:
            continue
        ratio = ns / 1000.0
        missed |= target is not None and ratio > target
        print(f"  {what:<52} {ratio:6.3f}{verdict(ratio, target)}")
    print("\ntimes (mean):")
    for what, bench in TIMES:
        ns = mean_ns(root, bench)
        if ns is not None:
            print(f"  {what:<52} {show(ns)}")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
