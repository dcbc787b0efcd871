"""Check that two sets of run files hold the same learning curves, run for run.

When the package's defaults change to a setting a study contender already ran with (attempt 5 made
``contribution="td"`` the default, which attempt 2's ``complementary-td`` ablation had run), the new
default's runs should reproduce the old contender's eval point for eval point: the runs are
deterministic on the study's CPU setup. This prints, per (environment, seed) present in both sets,
whether every eval return matches exactly, and the ratio of their training CPU times::

    python -m benchmarks.diagnostics.same_curves \\
        docs/benchmarks/runs complementary \\
        docs/benchmarks/runs-archive/attempt-2 complementary-td

Exit status 1 if any pair differs.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from benchmarks.harness.store import scan_runs


def load_runs(folder: Path, contender: str) -> dict[str, dict[str, Any]]:
    """Done run files of ``contender`` in ``folder``, keyed by ``"<env>__s<seed>"``."""
    records, _ = scan_runs(folder)
    return {f"{r.env}__s{r.seed}": r.data for r in records if r.contender == contender and r.status == "done"}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folder_a", type=Path)
    parser.add_argument("contender_a")
    parser.add_argument("folder_b", type=Path)
    parser.add_argument("contender_b")
    args = parser.parse_args()
    a, b = load_runs(args.folder_a, args.contender_a), load_runs(args.folder_b, args.contender_b)
    common = sorted(a.keys() & b.keys())
    if not common:
        print("no (environment, seed) pair is done in both sets", file=sys.stderr)
        return 1
    differ = 0
    for key in common:
        same = a[key]["curve"]["returns"] == b[key]["curve"]["returns"]
        differ += not same
        cpu = a[key]["timing"]["train_cpu_seconds"] / b[key]["timing"]["train_cpu_seconds"]
        print(f"{key:32s} {'identical' if same else 'DIFFERENT'}  train CPU time a/b {cpu:.2f}")
    print(f"{len(common) - differ} of {len(common)} pairs identical")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
