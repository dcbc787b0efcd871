"""
Command line of the benchmark: run the pending runs of a matrix.

::

    python -m benchmarks.run [--matrix PATH] [--out DIR] [--workers N]
        [--ray-address auto|ray://HOST:PORT|local] [--only-contenders a,b] [--only-envs x,y]
        [--seeds 0-4] [--retry-failed] [--dry-run]

It loads the matrix (:mod:`.matrix_yaml`), classifies its runs (:mod:`.plan`), measures R_random
for the entries with pending runs (:mod:`.normalize`), and executes the pending runs
(:mod:`.execute`) in local processes or on Ray (:mod:`.backends`).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from benchmarks.harness.execute import execute_plan
from benchmarks.harness.matrix_yaml import load_matrix
from benchmarks.harness.normalize import ensure_random_scores
from benchmarks.harness.plan import plan_runs
from benchmarks.harness.seeds import parse_seeds

#: Default output folder (relative to the current directory).
DEFAULT_OUT = Path("docs/benchmarks/runs")


def _split(value: str | None) -> list[str] | None:
    if value is None:
        return None
    return [part.strip() for part in value.split(",") if part.strip()]


def build_parser() -> argparse.ArgumentParser:
    """:return: The argument parser of ``python -m benchmarks.run``."""
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.run",
        description="Run the pending runs of a benchmark matrix (resumable; finished runs are skipped).",
    )
    parser.add_argument(
        "--matrix", type=Path, default=None, help="matrix YAML (default: benchmarks/matrices/default.yml)"
    )
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"runs folder (default: {DEFAULT_OUT})")
    parser.add_argument(
        "--workers",
        type=int,
        default=None,
        help="local processes (default 1; 0 = in this process, for debugging). With --ray-address: "
        "CPUs of a 'local' instance and a cap on runs in flight",
    )
    parser.add_argument(
        "--ray-address",
        default=None,
        help="run on Ray: 'auto', 'ray://host:port', or 'local' to start a local instance "
        "(needs the [distributed] extra)",
    )
    parser.add_argument("--only-contenders", default=None, help="comma-separated contender names")
    parser.add_argument("--only-envs", default=None, help="comma-separated suite entry names (or env ids)")
    parser.add_argument("--seeds", default=None, help="seed subset, e.g. '0-4' or '0,3,5-7'")
    parser.add_argument("--retry-failed", action="store_true", help="also re-run runs whose file says failed")
    parser.add_argument("--dry-run", action="store_true", help="list the pending runs and exit")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """
    Entry point of ``python -m benchmarks.run``.

    :param argv: Arguments (default ``sys.argv[1:]``).
    :return: Exit status: 0 if nothing failed, 1 if some run failed or was lost, 2 on bad input.
    """
    args = build_parser().parse_args(argv)
    try:
        matrix = load_matrix(args.matrix).select(
            contenders=_split(args.only_contenders),
            envs=_split(args.only_envs),
            seeds=parse_seeds(args.seeds) if args.seeds is not None else None,
        )
        if args.workers is not None and args.workers < 0:
            raise ValueError("--workers must be >= 0")
        plan = plan_runs(matrix, args.out, retry_failed=args.retry_failed)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2

    total = len(plan.states)
    print(
        f"matrix {matrix.source}: {total} runs ({len(matrix.contenders)} contenders x {len(matrix.suite)} entries x "
        f"{len(matrix.seeds)} seeds); done {plan.count('done')}, failed {plan.count('failed')}, "
        f"corrupt {plan.count('corrupt')}, missing {plan.count('missing')}; pending {len(plan.pending)} "
        f"({sum(s.entry.budget for s in plan.pending):,} env steps)"
    )
    if args.dry_run:
        for spec in plan.pending:
            print(f"  {spec.run_id}  [{plan.states[spec.run_id]}]  budget {spec.entry.budget}")
        return 0
    if not plan.pending:
        return 0

    entries = {spec.entry.name: spec.entry for spec in plan.pending}
    print(f"measuring / loading R_random for {sorted(entries)} ...", flush=True)
    ensure_random_scores(
        args.out,
        [(name, entry.eval_env_dict()) for name, entry in entries.items()],  # R_random on what is evaluated
        episodes=matrix.random_policy.episodes,
        seed=matrix.random_policy.seed,
    )
    try:
        summary = execute_plan(
            plan.pending,
            args.out,
            workers=args.workers if (args.workers is not None or args.ray_address) else 1,
            ray_address=args.ray_address,
            progress=not args.no_progress,
        )
    except RuntimeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted: finished runs are saved; run the same command again to resume", file=sys.stderr)
        return 130
    print(f"finished: {len(summary.done)} done, {len(summary.failed)} failed, {len(summary.lost)} lost")
    for run_id in summary.failed:
        print(f"  failed: {run_id} (traceback in its run file)")
    return 0 if not (summary.failed or summary.lost) else 1
