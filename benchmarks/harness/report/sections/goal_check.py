"""
The goal check of the report page: the goal of docs/benchmarks/protocol.md criterion by criterion, or the
protocol's goals suite by suite (:func:`~benchmarks.harness.report.goals.suite_comparisons`) and
the cost goal.
"""

from __future__ import annotations

from collections.abc import Sequence

from benchmarks.harness.report.goals import SuiteComparison
from benchmarks.harness.report.markdown import join_blocks, markdown_table
from benchmarks.harness.report.statistics import Statistics

#: Goal of docs/benchmarks/protocol.md.
GOAL_IQM_RATIO = 1.10
GOAL_WALLCLOCK_RATIO = 1.15
#: The cost goal of the protocol's suites: CPU time against the reference's, side by side.
GOAL_CPU_RATIO = 1.10


def goal_section(stats: Statistics, target: str, baselines: Sequence[str], reference: str) -> str:
    """The goal of docs/benchmarks/protocol.md, criterion by criterion."""
    return join_blocks(
        f"## Goal check: `{target}` against `{reference}` (docs/benchmarks/protocol.md)",
        _goal_table(stats, target, baselines, reference),
    )


def suite_goal_section(comparisons: Sequence[SuiteComparison], stats: Statistics, target: str, reference: str) -> str:
    """The protocol's goals suite by suite, then the cost goal."""
    cpu = stats.cpu_ratio.get(target)
    return join_blocks(
        f"## Goals per suite: `{target}` (docs/benchmarks/protocol.md)",
        "IQM of the normalised AUC over the other contender's and P(target > it), on the seeds both have "
        "done on every entry of the suite. The control goal holds when it is met on at least one suite.",
        suite_goal_tables(comparisons),
        f"Cost goal: CPU time at most {GOAL_CPU_RATIO:.2f}x `{reference}`'s, measured side by side by "
        "`benchmarks/perf.py` (docs/performance.md). The run files' own CPU-time ratio, on a shared machine: "
        f"{cpu.fmt() if cpu else 'n/a'}.",
    )


def suite_goal_tables(comparisons: Sequence[SuiteComparison]) -> str:
    """
    :param comparisons: :func:`~benchmarks.harness.report.goals.suite_comparisons`'s output.
    :return: One heading line and one table per suite: ratio, P and the goal's verdict per contender.
    """
    blocks = []
    for suite in dict.fromkeys(c.suite for c in comparisons):
        rows = [c for c in comparisons if c.suite == suite]
        blocks.append(f"**{suite} suite** ({', '.join(rows[0].entries)})")
        blocks.append(
            markdown_table(
                ["against", "seeds", "IQM AUC ratio [95% CI]", "P(target > it) [95% CI]", "goal", "met?"],
                [
                    [
                        f"`{c.other}`",
                        f"{len(c.seeds)}" + (f"; no runs yet on {', '.join(c.missing)}" if c.missing else ""),
                        c.ratio.fmt() if c.ratio else "n/a",
                        c.p.fmt() if c.p else "n/a",
                        c.goal,
                        "n/a" if c.met is None else _verdict(c.met),
                    ]
                    for c in rows
                ],
            )
        )
    return join_blocks(*blocks)


def _goal_table(stats: Statistics, target: str, baselines: Sequence[str], reference: str) -> str:
    """Each criterion of the goal, what was measured and whether it is met (a sentence when it cannot be checked)."""
    if target not in stats.aggregated or reference not in stats.aggregated:
        return f"Not available yet: `{target}` and `{reference}` both need complete seeds."
    rows = []
    ratio = stats.iqm_ratio[target]
    rows.append(
        [
            f"IQM of normalised AUC at least {GOAL_IQM_RATIO:.2f}x `{reference}`",
            f"{ratio.fmt(2)}x",
            _verdict(ratio.point >= GOAL_IQM_RATIO),
        ]
    )
    poi = stats.poi["AUC"].get((target, reference))
    if poi is not None:
        rows.append(
            [f"lower bound of the P(`{target}` > `{reference}`) CI above 0.5", poi.fmt(), _verdict(poi.low > 0.5)]
        )
    for baseline in baselines:
        if baseline in (reference, target):
            continue
        if baseline not in stats.aggregated:
            rows.append([f"not worse than `{baseline}`", "no complete seeds yet", "n/a"])
            continue
        mine = stats.aggregates["AUC"][target][0]
        theirs = stats.aggregates["AUC"][baseline][0]
        poi_b = stats.poi["AUC"].get((target, baseline))
        rows.append(
            [
                f"not worse than `{baseline}` (IQM AUC at least `{baseline}`'s)",
                f"{mine.point:.3f} vs {theirs.point:.3f}" + (f"; P(X > Y) {poi_b.fmt()}" if poi_b else ""),
                _verdict(mine.point >= theirs.point),
            ]
        )
    wall = stats.wallclock.get(target, {}).get("all")
    if wall is not None:
        rows.append(
            [
                f"median wall-clock ratio at most {GOAL_WALLCLOCK_RATIO:.2f}",
                wall.fmt(),
                _verdict(wall.n > 0 and wall.median <= GOAL_WALLCLOCK_RATIO) if wall.n else "n/a",
            ]
        )
    return markdown_table(["target", "measured", "met?"], rows)


def _verdict(ok: bool) -> str:
    """:return: The "met?" cell of the goal table."""
    return "**yes**" if ok else "**no**"
