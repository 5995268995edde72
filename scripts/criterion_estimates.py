"""Reading criterion's results, for the benches' `ratios.py` (halo-axum's, halo-client's).

Each script puts this folder on `sys.path` and imports `criterion_dir` and `estimates`.
"""

import json
import os
import sys
from pathlib import Path


def criterion_dir():
    """Where criterion's results are: the script's first argument, else
    `$CARGO_TARGET_DIR/criterion`, else `target/criterion` of this workspace."""
    if len(sys.argv) > 1:
        return Path(sys.argv[1])
    target = os.environ.get("CARGO_TARGET_DIR")
    if target:
        return Path(target) / "criterion"
    return Path(__file__).resolve().parents[1] / "target" / "criterion"


def estimates(root, bench):
    """The mean and median of `bench` (`group/name`) in nanoseconds, from its
    `new/estimates.json` under `root`; None when it was not measured."""
    path = root / bench / "new" / "estimates.json"
    if not path.is_file():
        return None
    with path.open() as f:
        data = json.load(f)
    return {key: data[key]["point_estimate"] for key in ("mean", "median")}
