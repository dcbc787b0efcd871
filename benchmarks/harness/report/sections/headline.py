"""
The headline section of the report page: aggregates of every aggregated contender, and P(X > Y) between
the headline's contenders.
"""

from __future__ import annotations

from collections.abc import Sequence

from benchmarks.harness.report.collect import ReportData
from benchmarks.harness.report.markdown import join_blocks, markdown_table
from benchmarks.harness.report.statistics import Statistics


def headline_section(data: ReportData, stats: Statistics, target: str, baselines: Sequence[str], reference: str) -> str:
    """Aggregates of every aggregated contender, and P(X > Y) between the headline's contenders."""
    poi_table = _headline_poi_table(stats, _headline_contenders(stats, target, baselines, reference))
    return join_blocks(
        "## Headline",
        "Normalised score `(R - R_random) / (R_ref - R_random)` per environment; **AUC** = mean over the "
        "eval points (sample efficiency), **final** = mean over the last 3 eval points. Aggregated over "
        "environments and the seeds done on every environment.",
        _aggregates_table(data, stats, reference),
        "Probability of improvement P(X > Y) (rliable; per-environment Mann-Whitney, averaged):" if poi_table else "",
        poi_table,
    )


def _aggregates_table(data: ReportData, stats: Statistics, reference: str) -> str:
    """Seeds, IQM / mean / optimality gap of AUC, IQM of the final score and IQM ratio, per aggregated contender."""
    rows = []
    for contender in stats.aggregated:
        auc_iv = stats.aggregates["AUC"][contender]
        fin_iv = stats.aggregates["final"][contender]
        ratio = stats.iqm_ratio.get(contender)
        rows.append(
            [
                f"`{contender}`",
                len(data.complete_seeds[contender]),
                auc_iv[0].fmt(),
                auc_iv[1].fmt(),
                auc_iv[2].fmt(),
                fin_iv[0].fmt(),
                ratio.fmt(2) if ratio else ("1 (reference)" if contender == reference else "n/a"),
            ]
        )
    return markdown_table(
        [
            "contender",
            "seeds",
            "IQM AUC [95% CI]",
            "mean AUC",
            "optimality gap AUC",
            "IQM final",
            f"IQM AUC / {reference}",
        ],
        rows,
    )


def _headline_poi_table(stats: Statistics, headline: Sequence[str]) -> str:
    """P(X > Y) on AUC and final for the tested pairs within the headline ("" when there is none)."""
    rows = [
        [f"`{x}`", f"`{y}`", stats.poi["AUC"][(x, y)].fmt(), stats.poi["final"][(x, y)].fmt()]
        for (x, y) in stats.poi.get("AUC", {})
        if x in headline and y in headline
    ]
    if not rows:
        return ""
    return markdown_table(["X", "Y", "P(X > Y) on AUC [95% CI]", "P(X > Y) on final [95% CI]"], rows)


def _headline_contenders(stats: Statistics, target: str, baselines: Sequence[str], reference: str) -> list[str]:
    """:return: The aggregated contenders of the headline comparison: target, reference and baselines."""
    return [c for c in stats.aggregated if c in (target, reference, *baselines)]
