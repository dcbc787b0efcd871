"""
Every generated page of the docs, regenerated from the committed run files in one command::

    python -m benchmarks.regenerate                  # all pages, in place
    python -m benchmarks.regenerate --list           # the commands, one a line
    python -m benchmarks.regenerate --only study-laber --out-root /tmp/pages

Each page is the output of one documented command (the one its results page quotes); :data:`PAGES`
lists them, so that a change to the harness is checked against every page at once: regenerate, then
``git diff docs`` shows what the change moved. With ``--out-root`` the pages are written under that
folder instead (``--out`` and ``--plots`` prefixed with it), each still quoting its committed
command, so that a regenerated page can be compared byte for byte with the committed one
(``tests/test_benchmark_pages.py``).

Pages written by hand (the protocol, the history, the code checks, the results pages that read the
generated tables) are not here; neither are the outputs of diagnostics that train (score spreads,
ratio temperatures): they need the training, not the run files.
"""

from __future__ import annotations

import argparse
import importlib
import shlex
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

#: The suites of the 8-entry DQN screens and studies, as their gates pages split them.
_SUITES_8 = (
    "classic=CartPole-v1,MountainCar-v0,LunarLander-v3,BitFlipping-10;"
    "non-stationary=CartPole-drift,CartPole-family-uniform,CartPole-family-sequential,LunarLander-drift"
)
_SAC_SUITE = "classic=Pendulum-v1,LunarLanderContinuous-v3"

#: Options whose value is a path the command writes (prefixed by ``--out-root``).
_OUTPUT_OPTIONS = ("--out", "--plots")


@dataclass(frozen=True)
class Page:
    """
    One generated page (with its figures): the module that writes it and its arguments.

    :param module: The module run as ``python -m <module>``; its ``main(argv)`` writes the page.
    :param args: The arguments, as the page (or the results page reading it) quotes them.
    """

    module: str
    args: tuple[str, ...]

    @property
    def command(self) -> str:
        """:return: The shell command that writes the page."""
        return " ".join(["python", "-m", self.module, *(shlex.quote(a) for a in self.args)])

    @property
    def output(self) -> str:
        """:return: The file or folder the command writes (its ``--out``)."""
        return self.args[self.args.index("--out") + 1]

    def argv(self, out_root: Path | None = None) -> list[str]:
        """:return: The arguments, with the written paths under ``out_root`` when one is given."""
        argv = list(self.args)
        if out_root is not None:
            for i, arg in enumerate(argv[:-1]):
                if arg in _OUTPUT_OPTIONS:
                    argv[i + 1] = str(out_root / argv[i + 1])
        return argv


def _report(runs: str, out: str, matrix: str, *options: str) -> Page:
    return Page("benchmarks.report", ("--runs", runs, "--out", out, *options, "--matrix", matrix))


def _gates(runs: str, out: str, *options: str) -> Page:
    return Page("benchmarks.diagnostics.screen_gates", (runs, *options, "--out", out))


#: Every generated page, in the order of the results index (docs/results.md).
PAGES: tuple[Page, ...] = (
    # The rliable reports: one README.md and its figures per runs folder.
    _report("docs/benchmarks/runs", "docs/benchmarks", "benchmarks/matrices/default.yml"),
    _report(
        "docs/benchmarks/study/runs",
        "docs/benchmarks/study",
        "benchmarks/matrices/study.yml",
        *("--target", "density-fresh-td", "--baselines", "dqn,per,density-control", "--reference", "dqn"),
        *("--control", "density-control", "--suites", "protocol"),
    ),
    _report(
        "docs/benchmarks/study-sac/runs",
        "docs/benchmarks/study-sac",
        "benchmarks/matrices/study-sac.yml",
        *("--target", "density-fresh-td", "--baselines", "sac,per,density-control", "--reference", "sac"),
        *("--control", "density-control", "--full-seeds", "5"),
    ),
    _report(
        "docs/benchmarks/screen-progress/runs",
        "docs/benchmarks/screen-progress",
        "benchmarks/matrices/screen-progress.yml",
        *("--target", "density-fresh-td-auto", "--baselines", "density-fresh-td-fixed,dqn,per,fresh-td-a1"),
        *("--reference", "dqn", "--full-seeds", "5", "--suites", _SUITES_8),
    ),
    _report(
        "docs/benchmarks/study-laber/runs",
        "docs/benchmarks/study-laber",
        "benchmarks/matrices/study-laber.yml",
        *("--target", "laber", "--baselines", "dqn"),
    ),
    _report(
        "docs/benchmarks/sac/runs",
        "docs/benchmarks/sac",
        "benchmarks/matrices/sac.yml",
        *("--baselines", "sac,per", "--reference", "sac", "--full-seeds", "5"),
    ),
    _report("docs/multitask/runs", "docs/multitask", "benchmarks/matrices/multitask.yml"),
    # The pilots of issue 31's gate 0.
    Page(
        "benchmarks.pilot_progress",
        ("report", "--runs", "docs/benchmarks/pilot-progress/runs", "--out", "docs/benchmarks/pilot-progress"),
    ),
    Page(
        "benchmarks.pilot_return",
        ("report", "--runs", "docs/benchmarks/pilot-return/runs", "--out", "docs/benchmarks/pilot-return"),
    ),
    # The screens' gates (docs/results/screen_gates*.md, screen_actor_batch.md, study_laber.md).
    _gates(
        "docs/benchmarks/screen-progress/runs",
        "docs/benchmarks/screen-progress/gates.md",
        *("--candidates", "density-fresh-td-auto", "--fixed", "density-fresh-td-fixed", "--suites", _SUITES_8),
    ),
    _gates(
        "docs/benchmarks/screen-progress/runs",
        "docs/benchmarks/screen-progress/gates-laber.md",
        *("--candidates", "laber", "--fixed", "density-fresh-td-fixed", "--suites", _SUITES_8),
    ),
    _gates(
        "docs/benchmarks/screen-progress/runs",
        "docs/benchmarks/screen-progress/gates-fresh-td.md",
        *("--candidates", "fresh-td-a1", "--fixed", "density-fresh-td-fixed", "--suites", _SUITES_8),
    ),
    Page(
        "benchmarks.diagnostics.strength_trace",
        (
            "docs/benchmarks/screen-progress/runs",
            *("--contender", "density-fresh-td-auto", "--out", "docs/benchmarks/screen-progress/strength_trace.png"),
        ),
    ),
    Page(
        "benchmarks.diagnostics.harm_noise",
        (
            "docs/benchmarks/study/runs",
            *("--contender", "density-control", "--reference", "dqn", "--out", "docs/benchmarks/study/harm-noise.md"),
        ),
    ),
    Page(
        "benchmarks.diagnostics.harm_floor",
        (
            *("docs/benchmarks/study-laber/runs", "laber"),
            *("--control-runs", "docs/benchmarks/study/runs", "docs/benchmarks/study-laber/runs"),
            *("--out", "docs/benchmarks/study-laber/gates.md"),
        ),
    ),
    Page(
        "benchmarks.diagnostics.harm_floor",
        (
            *("docs/benchmarks/study-laber/runs", "laber", "--seeds", "5-9"),
            *("--control-runs", "docs/benchmarks/study/runs", "docs/benchmarks/study-laber/runs"),
            *("--out", "docs/benchmarks/study-laber/gates-seeds-5-9.md"),
        ),
    ),
    _gates(
        "docs/benchmarks/screen-actor-batch/runs",
        "docs/benchmarks/screen-actor-batch/gates.md",
        *("--candidates", "per-actor-uniform,density-fresh-td-actor-uniform,density-fresh-td-fixed,per"),
        *("--control", "density-control", "--baselines", "sac", "--seeds", "0,1,2,3,4", "--suites", _SAC_SUITE),
    ),
    _gates(
        "docs/benchmarks/screen-actor-batch/runs",
        "docs/benchmarks/screen-actor-batch/gates-laber.md",
        *("--candidates", "laber,laber-actor-uniform,per", "--control", "density-control", "--baselines", "sac"),
        *("--seeds", "0,1,2,3,4", "--suites", _SAC_SUITE),
    ),
    # Issue 45's triage: the rule's ratios and the age of the draws.
    Page("benchmarks.triage_report", ("--runs", "docs/benchmarks/triage/runs", "--out", "docs/results/triage.md")),
    # The per-task tables of the multi-task entries.
    Page(
        "benchmarks.multitask_study",
        ("--runs", "docs/multitask/runs", "--out", "docs/multitask/per_task.md", "--plots", "docs/multitask"),
    ),
    Page(
        "benchmarks.multitask_study",
        ("--runs", "docs/benchmarks/screen/runs", "--out", "docs/benchmarks/screen/multitask.md"),
    ),
)


#: Pages that the command their results page quotes no longer writes byte for byte, left as committed
#: (the results pages read them). Attempt 6's screen gates were written by ``screen_gates.py`` before
#: issue 31 renumbered its gates (the no-harm table became gate 3) and added the strength column.
#: Today's script gives the same numbers for ``gates-nonlearned.md`` and ``gates-relo.md`` in the new
#: layout. For ``gates.md`` it keeps only the entries where every listed contender has all its seeds:
#: ``density-loss``, stopped after two entries, would drop four of ``density-sampling``'s six.
NOT_REPRODUCED: tuple[Page, ...] = (
    _gates(
        "docs/benchmarks/screen/runs",
        "docs/benchmarks/screen/gates.md",
        *("--candidates", "density-sampling,density-loss", "--control", "density-control"),
    ),
    _gates(
        "docs/benchmarks/screen/runs",
        "docs/benchmarks/screen/gates-nonlearned.md",
        *("--candidates", "fresh-td,density-fresh-td", "--control", "density-control"),
    ),
    _gates(
        "docs/benchmarks/screen/runs",
        "docs/benchmarks/screen/gates-relo.md",
        *("--candidates", "relo", "--control", "density-control"),
    ),
)


def write_page(page: Page, out_root: Path | None = None) -> None:
    """
    Run the page's command in this process.

    :param page: The page.
    :param out_root: Write under this folder instead of in place (the page still quotes its command).
    :raises RuntimeError: if the command reports a failure.
    """
    argv = page.argv(out_root)
    if out_root is not None:
        output = Path(argv[page.args.index("--out") + 1])
        (output.parent if output.suffix else output).mkdir(parents=True, exist_ok=True)
    main = importlib.import_module(page.module).main
    status = main(argv, quoted_argv=page.args) if page.module == "benchmarks.report" else main(argv)
    if status:
        raise RuntimeError(f"{page.command} exited with {status}")


def main(argv: Sequence[str] | None = None) -> int:
    """
    Entry point of ``python -m benchmarks.regenerate``.

    :param argv: Arguments (default ``sys.argv[1:]``).
    :return: 0 when every page was written, 1 otherwise.
    """
    parser = argparse.ArgumentParser(prog="python -m benchmarks.regenerate", description=__doc__.split("::")[0])
    parser.add_argument("--only", default=None, help="only the pages whose output path contains this text")
    parser.add_argument("--out-root", type=Path, default=None, help="write under this folder instead of in place")
    parser.add_argument("--list", action="store_true", help="print the commands and exit")
    args = parser.parse_args(argv)
    pages = [p for p in PAGES if args.only is None or args.only in p.output]
    if args.list:
        print("\n".join(p.command for p in pages))
        return 0
    failed = []
    for page in pages:
        start = time.perf_counter()
        print(f"$ {page.command}", flush=True)
        try:
            write_page(page, args.out_root)
        except Exception as exc:  # one broken page must not hide the state of the others
            print(f"error: {exc}", file=sys.stderr)
            failed.append(page.output)
        print(f"  ({time.perf_counter() - start:.0f} s)", flush=True)
    if failed:
        print(f"failed: {failed}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
