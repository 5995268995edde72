#!/usr/bin/env python3
"""Prints the ratios of the `discovery`, `execution` and `jwt` benchmarks from criterion's
estimates.

Run after `cargo bench -p halo-axum` (any bench, any filter; `--features jwt --bench jwt` for
the JWT figures; missing results are skipped):

    python3 halo-axum/benches/ratios.py [CRITERION_DIR]

CRITERION_DIR defaults to `$CARGO_TARGET_DIR/criterion`, else `target/criterion` of the
workspace this file lives in. Exits 1 when a figure misses its target.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
from criterion_estimates import criterion_dir, estimates  # noqa: E402

# (label, baseline, candidate, highest acceptable ratio or None for information only).
# Measured one after the other, so load from other processes skews them: the targets of (a)
# and (b) are judged on the paired measurements below.
RATIOS = [
    ("(a) GET, router.layer(halo) / plain", "get/plain", "get/halo_layer", None),
    ("    GET, halo.layer(router) / plain", "get/plain", "get/halo_outer", None),
    ("    GET, router.layer(Identity) / plain", "get/plain", "get/identity_layer", None),
    ("    GET, router.layer(halo) / router.layer(Identity)", "get/identity_layer",
     "get/halo_layer", None),
    ("(b) OPTIONS /, router.layer(halo) / static GET", "manifest/static_get",
     "manifest/halo_layer", None),
    ("    OPTIONS /, halo.layer(router) / static GET", "manifest/static_get",
     "manifest/halo_outer", None),
    ("(d) OPTIONS /?tags=x / OPTIONS /, 1,000 tools", "tags_1000/unfiltered",
     "tags_1000/filtered_x", None),
    ("(f) 10,002 SSE events, HALO tool stream / axum Sse", "sse_10k/axum_sse",
     "sse_10k/halo_tool", None),
]

# (label, paired benchmark, highest acceptable ratio): measured alternating, reported as µs.
PAIRED = [
    ("    control: GET, plain / plain (reads 1.000 when sound)", "paired/get_plain_vs_plain",
     None),
    ("(a) GET, router.layer(halo) / plain", "paired/get_halo_layer_vs_plain", 1.03),
    ("    GET, halo.layer(router) / plain", "paired/get_halo_outer_vs_plain", 1.03),
    ("    GET, a pass-through wrapper holding an Arc / plain", "paired/get_arc_outer_vs_plain",
     None),
    ("    GET, halo.layer(router) / that pass-through wrapper",
     "paired/get_halo_outer_vs_arc_outer", None),
    ("    GET, router.layer(halo) / router.layer(Identity)",
     "paired/get_halo_layer_vs_identity", None),
    ("    GET, router.layer(pass-through holding an Arc) / router.layer(Identity)",
     "paired/get_arc_layered_vs_identity", None),
    ("    GET, router.layer(halo) / router.layer(pass-through holding an Arc)",
     "paired/get_halo_layer_vs_arc_layered", None),
    ("(b) OPTIONS /, router.layer(halo) / static GET",
     "paired/manifest_halo_layer_vs_static_get", 1.10),
    ("    OPTIONS /, halo.layer(router) / static GET",
     "paired/manifest_halo_outer_vs_static_get", 1.10),
    ("    OPTIONS /, halo.layer(router), metrics on / off (no recorder)",
     "paired/manifest_metrics_vs_off", None),
    ("    GET, halo.layer(router), metrics on / off (no recorder)",
     "paired/get_metrics_vs_off", None),
    ("    control: POST, validation off / off, in process", "validate_paired/off_vs_off", None),
    ("(e) POST 1 KiB, validation on / off, in process", "validate_paired/post_1k_on_vs_off",
     None),
    ("    control: POST over HTTP, validation off / off", "validate_paired/http_off_vs_off",
     None),
    ("(e) POST 1 KiB over HTTP, validation on / off", "validate_paired/http_post_1k_on_vs_off",
     1.10),
    ("    the same with formats as annotations (validate_formats(false))",
     "validate_paired/http_post_1k_formats_as_annotations_vs_off", None),
    ("(g) GET tool over HTTP, rate + deadline enforced / none declared",
     "govern_paired/http_get_on_vs_off", 1.10),
    ("    the same, the governed tool's layer with metrics on (no recorder)",
     "govern_paired/http_get_on_metrics_vs_off", 1.10),
    ("    governed GET tool, metrics on / off (no recorder)",
     "govern_paired/http_get_metrics_vs_none", None),
    ("    undeclared GET tool, metrics on / off (the execution path metrics force)",
     "govern_paired/http_get_plain_metrics_vs_off", None),
    ("    JWT in process: RS256 reused (cached) / static token",
     "jwt_auth_paired/rs256_cached_vs_static", None),
    ("    JWT in process: RS256, no cache (cold) / static",
     "jwt_auth_paired/rs256_cold_vs_static", None),
    ("    JWT in process: ES256, no cache (cold) / static",
     "jwt_auth_paired/es256_cold_vs_static", None),
    ("    JWT in process: RS256 cold / its signature alone",
     "jwt_auth_paired/rs256_cold_vs_signature", None),
    ("    control: governed GET over HTTP, static / static",
     "jwt_http_paired/governed_get_static_vs_static", None),
    ("JWT: governed GET over HTTP, RS256 cached / static",
     "jwt_http_paired/governed_get_rs256_cached_vs_static", 1.05),
    ("    the same, no cache (cache_ttl 0) / static",
     "jwt_http_paired/governed_get_rs256_cold_vs_static", None),
    ("    the same, a static token as long as the JWT / static",
     "jwt_http_paired/governed_get_long_static_vs_static", None),
]

# (label, benchmark, events per iteration): throughput from the mean time.
RATES = [
    ("(f) SSE events per second, HALO tool stream", "sse_10k/halo_tool", 10_002),
    ("    SSE events per second, axum Sse", "sse_10k/axum_sse", 10_002),
]

# (label, benchmark, highest acceptable milliseconds)
TIMES = [
    ("(c) build, from_openapi_json, 1,000 operations", "build/from_openapi_json_1000", 100.0),
    ("    build, HaloLayer::builder(utoipa), 1,000 operations", "build/builder_utoipa_1000",
     100.0),
]


def judged(median, limit):
    """The verdict on a median ratio against its highest acceptable `limit` (None: information
    only), and whether it missed."""
    if limit is None:
        return "", False
    ok = median <= limit
    return f"<= {limit:.2f} {'ok' if ok else 'MISSED'}", not ok


def measured(root, rows, columns):
    """The rows whose benchmarks (the row's items at `columns`) were all measured, each with
    their estimates; each of the others is printed as not measured."""
    for row in rows:
        found = [estimates(root, row[column]) for column in columns]
        if None in found:
            print(f"{row[0]:58} (not measured)")
            continue
        yield row, found


def main():
    root = criterion_dir()
    if not root.is_dir():
        sys.exit(f"no criterion results in {root}: run cargo bench first")
    missed = []
    print("sequential (one benchmark after the other; information only, load skews these)")
    print(f"{'':58} {'baseline ns':>14} {'measured ns':>14} {'ratio':>13}  target")
    print(f"{'':58} {'mean/median':>14} {'mean/median':>14} {'mean/median':>13}")
    for (label, _, _, limit), (b, c) in measured(root, RATIOS, (1, 2)):
        mean, median = c["mean"] / b["mean"], c["median"] / b["median"]
        verdict, miss = judged(median, limit)
        if miss:
            missed.append(label.strip())
        print(f"{label:58} {b['mean']:>14,.0f} {c['mean']:>14,.0f} {mean:>13.3f}  {verdict}")
        print(f"{'':58} {b['median']:>14,.0f} {c['median']:>14,.0f} {median:>13.3f}")
    print()
    print("paired (baseline and candidate alternating within each sample; less sensitive to load)")
    print(f"{'':58} {'ratio mean':>14} {'ratio median':>14}  target")
    for (label, _, limit), (e,) in measured(root, PAIRED, (1,)):
        mean, median = e["mean"] / 1000, e["median"] / 1000
        verdict, miss = judged(median, limit)
        if miss:
            missed.append("paired " + label.strip())
        print(f"{label:58} {mean:>14.3f} {median:>14.3f}  {verdict}")
    print()
    for (label, _, limit), (e,) in measured(root, TIMES, (1,)):
        mean, median = e["mean"] / 1e6, e["median"] / 1e6
        ok = median < limit
        if not ok:
            missed.append(label.strip())
        print(f"{label:58} mean {mean:8.2f} ms, median {median:8.2f} ms  "
              f"< {limit:.0f} ms {'ok' if ok else 'MISSED'}")
    for (label, _, events), (e,) in measured(root, RATES, (1,)):
        print(f"{label:58} {events / (e['mean'] / 1e9):>14,.0f} events/s")
    print("(targets are judged on the median)")
    if missed:
        print("missed: " + "; ".join(missed))
        sys.exit(1)


if __name__ == "__main__":
    main()
