"""
The training CPU time of one contender over another's, per (entry, seed) pair of a folder of run files.

    python -m benchmarks.diagnostics.cpu_ratio docs/benchmarks/study-laber/runs laber dqn

Prints the median ratio of ``timing.train_cpu_seconds`` per entry and over every pair. Each run was
timed on its own, beside whatever else the machine ran: the spread is the machine's as much as the
code's (docs/performance.md compares side by side).
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

from benchmarks.harness.store import scan_runs


def cpu_seconds(folder: Path, contender: str) -> dict[tuple[str, int], float]:
    """``(entry, seed) -> train CPU seconds`` of the contender's finished runs in ``folder``."""
    records, _ = scan_runs(folder)
    return {
        (r.env, r.seed): r.data["timing"]["train_cpu_seconds"]
        for r in records
        if r.contender == contender and r.status == "done"
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[1])
    parser.add_argument("runs", type=Path)
    parser.add_argument("contender")
    parser.add_argument("baseline")
    args = parser.parse_args()
    ours, theirs = cpu_seconds(args.runs, args.contender), cpu_seconds(args.runs, args.baseline)
    ratios: dict[str, list[float]] = {}
    for (entry, seed), seconds in sorted(ours.items()):
        if (entry, seed) in theirs:
            ratios.setdefault(entry, []).append(seconds / theirs[(entry, seed)])
    for entry, values in ratios.items():
        print(f"{entry:30s} {len(values):3d} pairs  median {statistics.median(values):.2f}")
    every = [value for values in ratios.values() for value in values]
    print(f"{'all':30s} {len(every):3d} pairs  median {statistics.median(every):.2f}")


if __name__ == "__main__":
    main()
