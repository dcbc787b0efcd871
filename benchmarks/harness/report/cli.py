"""
The command line of the report, and :func:`build_report`, which runs its steps: collect the run
files, compute the statistics, draw the figures, write the page.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path

from benchmarks.harness.matrix_yaml import read_title
from benchmarks.harness.report.collect import collect
from benchmarks.harness.report.goals import PROTOCOL_SUITES, parse_suites, suite_comparisons
from benchmarks.harness.report.page import DEFAULT_TITLE, FULL_SEEDS, render_page
from benchmarks.harness.report.plots import draw_figures
from benchmarks.harness.report.statistics import compute_statistics

#: How the page tells its reader to regenerate it.
PROG = "python -m benchmarks.report"


def build_report(
    runs_dir: str | Path,
    out_dir: str | Path,
    reps: int = 2000,
    seed: int = 0,
    target: str = "complementary",
    baselines: Sequence[str] = ("dqn", "per"),
    reference: str = "dqn",
    command: str | None = None,
    full_seeds: int = FULL_SEEDS,
    suites: str | None = None,
    control: str | None = None,
    title: str = DEFAULT_TITLE,
) -> Path:
    """
    Write ``README.md`` and the PNGs.

    :param runs_dir: Folder of the run files.
    :param out_dir: Folder of the page and figures.
    :param reps: Bootstrap replications.
    :param seed: Bootstrap seed.
    :param target: Contender tested for improvement.
    :param baselines: Contenders it is compared with.
    :param reference: Contender of the ratios (IQM and wall clock).
    :param command: Command line printed at the top of the page (default: rebuilt from the arguments).
    :param full_seeds: Complete seeds the study plans per contender (10 in docs/benchmarks/protocol.md;
        issue #4's SAC study: 5).
    :param suites: ``"classic=A,B;non-stationary=C"``: check the protocol's goals suite by suite
        (:mod:`.goals`) instead of once over all entries.
    :param control: The ``alpha=0`` control of the suite goals (one of ``baselines``).
    :param title: The page's H1: what the runs measure (``--matrix`` takes it from the matrix's ``title``).
    :return: Path of ``README.md``.
    :raises BudgetMismatchError: if runs of an environment have different budgets.
    :raises ValueError: if a suite has no goal in the protocol, or ``control`` is not a baseline.
    """
    if control is not None and control not in baselines:
        raise ValueError(f"control {control!r} must be one of the baselines {list(baselines)}")
    suite_map = parse_suites(suites) if suites else {}
    runs_dir = Path(runs_dir)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    data = collect(runs_dir)
    stats = compute_statistics(data, reps=reps, seed=seed, target=target, baselines=baselines, reference=reference)
    figures = draw_figures(data, stats, out_dir, reps, seed)
    if command is None:
        command = f"{PROG} --runs {shlex.quote(str(runs_dir))} --out {shlex.quote(str(out_dir))}"
        if reps != 2000:
            command += f" --reps {reps}"
        if full_seeds != FULL_SEEDS:
            command += f" --full-seeds {full_seeds}"
    goals = suite_comparisons(data, target, reference, baselines, control, suite_map, reps, seed) if suite_map else []
    page = render_page(
        data,
        stats,
        figures,
        out_dir,
        command,
        reps,
        target,
        baselines,
        reference,
        full_seeds,
        suite_goals=goals,
        title=title,
    )
    readme = out_dir / "README.md"
    readme.write_text(page)
    return readme


def main(argv: Sequence[str] | None = None, quoted_argv: Sequence[str] | None = None) -> int:
    """
    Entry point of ``python -m benchmarks.report``.

    :param argv: Arguments (default: ``sys.argv[1:]``); they are quoted back at the top of the page.
    :param quoted_argv: The arguments the page quotes instead of ``argv`` (default: ``argv``):
        :mod:`benchmarks.regenerate` writes a page elsewhere (``--out`` changed) to compare it byte
        for byte with the committed one, which quotes the committed command.
    :return: 0 on success, 2 on bad input (no runs, mismatched budgets, unreadable files, a matrix
        with no title).
    """
    parser = argparse.ArgumentParser(prog=PROG, description="Statistics and plots of the benchmark runs.")
    parser.add_argument("--runs", type=Path, default=Path("docs/benchmarks/runs"), help="folder of run files")
    parser.add_argument("--out", type=Path, default=Path("docs/benchmarks"), help="folder of README.md and PNGs")
    parser.add_argument("--reps", type=int, default=2000, help="bootstrap replications (default 2000)")
    parser.add_argument("--bootstrap-seed", type=int, default=0, help="seed of the bootstrap")
    parser.add_argument("--target", default="complementary", help="contender tested for improvement")
    parser.add_argument("--baselines", default="dqn,per", help="contenders it is compared with")
    parser.add_argument("--reference", default="dqn", help="contender of the IQM and wall-clock ratios")
    parser.add_argument(
        "--full-seeds",
        type=int,
        default=FULL_SEEDS,
        help=f"seeds per contender the study plans (default {FULL_SEEDS}); fewer is labelled a first look",
    )
    parser.add_argument(
        "--suites",
        default=None,
        help="'classic=EnvA,EnvB;non-stationary=EnvC': check the protocol's goals per suite "
        "(protocol suites: --suites protocol)",
    )
    parser.add_argument("--control", default=None, help="the alpha=0 control among the baselines (suite goals)")
    parser.add_argument(
        "--matrix",
        type=Path,
        default=None,
        help=f"the matrix YAML the runs come from: its 'title' heads the page (default: '{DEFAULT_TITLE}')",
    )
    args = parser.parse_args(argv)
    quoted = quoted_argv if quoted_argv is not None else (sys.argv[1:] if argv is None else argv)
    command = " ".join([PROG] + [shlex.quote(a) for a in quoted])
    if "--runs" not in command:
        command += f" --runs {shlex.quote(str(args.runs))}"
    if "--out" not in command:
        command += f" --out {shlex.quote(str(args.out))}"
    try:
        title = read_title(args.matrix) if args.matrix is not None else DEFAULT_TITLE
        readme = build_report(
            args.runs,
            args.out,
            reps=args.reps,
            seed=args.bootstrap_seed,
            target=args.target,
            baselines=[b for b in args.baselines.split(",") if b],
            reference=args.reference,
            command=command,
            full_seeds=args.full_seeds,
            suites=PROTOCOL_SUITES if args.suites == "protocol" else args.suites,
            control=args.control,
            title=title,
        )
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {readme}")
    return 0
