"""
The wall-clock cost section of the report page: wall-clock and CPU-time ratios to the reference.
"""

from __future__ import annotations

from benchmarks.harness.report.collect import ReportData
from benchmarks.harness.report.markdown import join_blocks, markdown_table
from benchmarks.harness.report.statistics import Statistics


def cost_section(data: ReportData, stats: Statistics, reference: str) -> str:
    """Wall-clock and CPU-time ratios to the reference."""
    return join_blocks(
        "## Wall-clock cost",
        f"Ratio of training wall-clock seconds to `{reference}` on the same environment and seed: median "
        "[min, max] (n pairs). Training seconds are the time inside `model.learn()` minus the evaluations "
        "(see `benchmarks/harness/run.py`). Only ratios are quoted: the machines are shared and noisy.",
        _cost_table(data, stats),
    )


def _cost_table(data: ReportData, stats: Statistics) -> str:
    """Wall-clock ratio per environment and over all of them, and the pooled CPU-time ratio, per contender."""
    rows = [
        [
            f"`{c}`",
            *[stats.wallclock[c][env].fmt() for env in data.envs],
            stats.wallclock[c]["all"].fmt(),
            stats.cpu_ratio[c].fmt(),
        ]
        for c in data.contenders
        if c in stats.wallclock
    ]
    return markdown_table(["contender", *data.envs, "all environments", "CPU-time ratio, all"], rows)
