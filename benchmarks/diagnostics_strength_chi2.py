"""
Did the learned selection strength (``alpha="auto"``) choose anything but what chance would?

The bandit chooses a strength in {0, 0.5, 1} per window. One that learns nothing (rewards that do
not depend on the arm) treats the three arms alike, so the strength it uses has an expected value
of 0.5 on every entry. This reads the committed run files of the ``alpha="auto"`` screen and tests
that null:

- per run, the mean of the strength in force (``curve["strength"]``) over the eval points from a
  quarter of the budget on, as the screen's gates page (``strength``) averages it;
- per entry, the mean over seeds, and ``z = (mean - 0.5) / (s / sqrt(n))``, where ``s`` is the
  between-seed standard deviation, pooled over the entries (the default), or each entry's own
  (``--own-sd``, noisier with 4-5 seeds);
- ``chi2 = sum(z**2)`` on as many degrees of freedom as entries, and its upper-tail p-value.

Runs that do not record the strength (written before the runs logged it) are left out and counted.
It reads only JSON, so it runs from any checkout::

    python benchmarks/diagnostics_strength_chi2.py docs/benchmarks/screen-progress/runs
"""

from __future__ import annotations

import argparse
import json
import math
from collections import defaultdict
from pathlib import Path

import numpy as np

NULL_STRENGTH = 0.5


def chi2_sf(x: float, df: int) -> float:
    """Upper tail of the chi-squared distribution (closed form for an even ``df``, else a series)."""
    if df % 2 == 0:
        half = x / 2
        return math.exp(-half) * sum(half**i / math.factorial(i) for i in range(df // 2))
    # Regularised lower incomplete gamma P(df/2, x/2) by its series; the tail is 1 - P.
    a, half = df / 2, x / 2
    term = total = 1 / a
    for n in range(1, 500):
        term *= half / (a + n)
        total += term
    return 1 - total * math.exp(-half + a * math.log(half) - math.lgamma(a))


def seed_means(runs: Path, contender: str) -> tuple[dict[str, list[float]], int]:
    """Entry -> each seed's mean strength after warm-up; and how many done runs recorded none."""
    found: dict[str, list[float]] = defaultdict(list)
    missing = 0
    for path in sorted(runs.glob(f"{contender}__*.json")):
        record = json.loads(path.read_text())
        if record.get("status") != "done":
            continue
        curve = record["curve"]
        if "strength" not in curve:
            missing += 1
            continue
        steps = np.asarray(curve["timesteps"], dtype=float)
        values = np.asarray([np.nan if v is None else v for v in curve["strength"]], dtype=float)
        values = values[steps >= record["env"]["budget"] / 4]
        found[record["env"]["name"]].append(float(np.nanmean(values)))
    return dict(sorted(found.items())), missing


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", type=Path)
    parser.add_argument("--contender", default="density-fresh-td-auto")
    parser.add_argument("--own-sd", action="store_true", help="each entry's own between-seed sd, not the pooled one")
    args = parser.parse_args()
    means, missing = seed_means(args.runs, args.contender)
    if not means:
        raise SystemExit(f"no run of {args.contender!r} in {args.runs} records its strength")
    squares = sum(((np.asarray(v) - np.mean(v)) ** 2).sum() for v in means.values())
    pooled = math.sqrt(squares / sum(len(v) - 1 for v in means.values()))
    print(f"{args.contender}: {sum(map(len, means.values()))} runs, {missing} done runs without a strength record")
    print(f"pooled between-seed sd of a run's mean strength: {pooled:.3f}")
    print(f"{'entry':>28} | seeds | mean strength | sd    | z")
    chi2 = 0.0
    for env, values in means.items():
        sd = float(np.std(values, ddof=1)) if args.own_sd else pooled
        z = (float(np.mean(values)) - NULL_STRENGTH) / (sd / math.sqrt(len(values)))
        chi2 += z * z
        print(f"{env:>28} | {len(values):>5} | {np.mean(values):13.3f} | {np.std(values, ddof=1):.3f} | {z:+.2f}")
    df = len(means)
    print(f"chi2 = {chi2:.2f} on {df} df, p = {chi2_sf(chi2, df):.2f} (null: mean strength {NULL_STRENGTH} everywhere)")


if __name__ == "__main__":
    main()
