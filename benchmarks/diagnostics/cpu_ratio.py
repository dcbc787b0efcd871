"""
The training CPU time of one contender over another's, per (entry, seed) pair of a folder of run files.

    python -m benchmarks.diagnostics.cpu_ratio docs/benchmarks/study-laber/runs laber dqn

Prints the median ratio of ``timing.train_cpu_seconds`` per entry and over every pair. Each run was
timed on its own, beside whatever else the machine ran: the spread is the machine's as much as the
code's (docs/performance.md compares side by side).
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path


def cpu_seconds(folder: Path, contender: str) -> dict[tuple[str, int], float]:
    """``(entry, seed) -> train CPU seconds`` of the contender's finished runs in ``folder``."""
    out = {}
    for path in folder.glob(f"{contender}__*.json"):
        run = json.loads(path.read_text())
        if run.get("contender", {}).get("name") == contender and "timing" in run:
            out[(run["env"]["name"], run["seed"])] = run["timing"]["train_cpu_seconds"]
    return out


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
