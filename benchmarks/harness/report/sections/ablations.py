"""
The ablations section of the report page: each ablation's setting, its IQM ratio to the target, and
P(target > ablation).
"""

from __future__ import annotations

from typing import Any

from benchmarks.harness.report.collect import ReportData
from benchmarks.harness.report.markdown import join_blocks, markdown_table
from benchmarks.harness.report.statistics import Statistics


def ablation_section(data: ReportData, stats: Statistics, target: str, reference: str) -> str:
    """The ablations of the target ("" when there is none, or the target has no complete seed)."""
    if not (stats.ablations and target in stats.aggregated):
        return ""
    return join_blocks(
        f"## Ablations: each one changes one setting of `{target}`",
        _ablation_table(data, stats, target, reference),
    )


def _recorded_kwargs(data: ReportData, contender: str) -> dict[str, Any]:
    """:return: The model keyword arguments a contender's first run file records (``{}`` if none)."""
    return next((r.data["contender"].get("kwargs", {}) for r in data.records if r.contender == contender), {})


def _ablation_table(data: ReportData, stats: Statistics, target: str, reference: str) -> str:
    """One row per ablation: its setting, IQM ratio to the target and P(target > ablation)."""
    rows = []
    base = _recorded_kwargs(data, target)
    for ablation in stats.ablations:
        kwargs = _recorded_kwargs(data, ablation)
        changed = [f"`{k}={kwargs[k]!r}`" for k in sorted(kwargs) if k not in base or base[k] != kwargs[k]]
        changed += [f"`{k}` not set (its run's default)" for k in sorted(base) if k not in kwargs]
        setting = ", ".join(changed) or "(none)"
        vs_reference = stats.poi["AUC"].get((ablation, reference))
        rows.append(
            [
                f"`{ablation}`",
                setting,
                len(data.complete_seeds[ablation]),
                stats.aggregates["AUC"][ablation][0].fmt(),
                stats.ablation_ratio[ablation].fmt(2),
                stats.poi["AUC"][(target, ablation)].fmt(),
                stats.poi["final"][(target, ablation)].fmt(),
                vs_reference.fmt() if vs_reference else "n/a",
            ]
        )
    return markdown_table(
        [
            "ablation",
            "setting changed",
            "seeds",
            "IQM AUC [95% CI]",
            f"IQM AUC / {target}",
            f"P({target} > ablation), AUC",
            f"P({target} > ablation), final",
            f"P(ablation > {reference}), AUC",
        ],
        rows,
    )
