"""The study's goals (docs/benchmarks/protocol.md, "Goals"), per suite, from its run files.

The same tables as the report's "Goals per suite" section (``python -m benchmarks.report
--suites protocol``), on a chosen set of seeds: a held-out replication is the table on seeds the
screen did not see (``--seeds 5-9``). Usage::

    python -m benchmarks.diagnostics.study_goals docs/benchmarks/study/runs \\
        --target density-fresh-td --control density-control --seeds 0-9 --out docs/benchmarks/study/goals.md
"""

from __future__ import annotations

import argparse
from pathlib import Path

from benchmarks.diagnostics.screen_gates import emit
from benchmarks.harness.report import (
    PROTOCOL_SUITES,
    collect,
    parse_suites,
    suite_comparisons,
    suite_goal_tables,
)
from benchmarks.harness.seeds import parse_seeds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", type=Path)
    parser.add_argument("--target", required=True)
    parser.add_argument("--control", required=True)
    parser.add_argument("--dqn", default="dqn")
    parser.add_argument("--per", default="per", help="PER's contender name; '' leaves PER out")
    parser.add_argument("--seeds", default="0-9")
    parser.add_argument("--reps", type=int, default=2000)
    parser.add_argument("--suites", default=PROTOCOL_SUITES, help="'classic=entry,entry;non-stationary=entry'")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    comparisons = suite_comparisons(
        collect(args.runs),
        args.target,
        args.dqn,
        [args.per] if args.per else [],
        args.control,
        parse_suites(args.suites),
        reps=args.reps,
        seeds=parse_seeds(args.seeds),
    )
    header = (
        f"Study goals for {args.target}, seeds {args.seeds}, from `{args.runs}`: IQM of the normalised AUC "
        f"over the other contender's and P({args.target} > other) on the seeds both have done on every "
        f"entry of the suite, stratified-bootstrap 95% CIs ({args.reps} replications)."
    )
    emit([header, "", suite_goal_tables(comparisons)], args.out)


if __name__ == "__main__":
    main()
