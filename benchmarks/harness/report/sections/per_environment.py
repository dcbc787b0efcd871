"""
The per-environment section of the report page: final returns and normalised AUCs of every done run, the
normalisation constants, and how far from uniform the replay samples (ESS).
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from benchmarks.harness.metrics import auc, final_score, mean_pm_std
from benchmarks.harness.report.collect import ReportData
from benchmarks.harness.report.markdown import join_blocks, markdown_table


def per_environment_section(data: ReportData) -> str:
    """Per-environment returns and AUCs of every done run, the normalisation constants, and the ESS of the draws."""
    ess_table = _ess_table(data)
    ess_blocks = (
        (
            "### How far from uniform the replay samples",
            "ESS fraction of the sampling distribution, `1 / (N Σ p_i²)` over the stored transitions: 1 is "
            "uniform replay, 0.1 means the draws concentrate as if on a tenth of the buffer. Per run, the mean "
            "over its eval points; then the median over seeds (n runs that recorded it).",
            ess_table,
        )
        if ess_table
        else ()
    )
    return join_blocks(
        "## Per environment",
        "Final eval return (mean of the last 3 eval points) per run, mean ± sample std over seeds (n seeds):",
        _final_return_table(data),
        "Normalised AUC per run, mean ± sample std over seeds (n seeds):",
        _auc_table(data),
        "Normalisation constants:",
        _constants_table(data),
        "R_random: mean return of a uniform-random policy, measured by the runner (`runs/random_scores.json`).",
        *ess_blocks,
    )


def _final_return_table(data: ReportData) -> str:
    """Raw final eval return of every done run, mean ± sample std over seeds, per contender and environment."""
    rows = []
    for contender in data.contenders:
        cells = []
        for env in data.envs:
            runs = data.curves[contender][env]
            if runs:
                finals = np.array([final_score(curve) for curve in runs.values()])
                cells.append(f"{mean_pm_std(finals, 1)} ({len(finals)})")
            else:
                cells.append("-")
        rows.append([f"`{contender}`", *cells])
    return markdown_table(["contender", *data.envs], rows)


def _auc_table(data: ReportData) -> str:
    """Normalised AUC of every done run, mean ± sample std over seeds, per contender and environment."""
    rows = []
    for contender in data.contenders:
        cells = []
        for env in data.envs:
            seeds = sorted(data.curves[contender][env])
            aucs = np.array([float(auc(data.normalized(contender, env, s))) for s in seeds])
            cells.append(f"{mean_pm_std(aucs, 3)} ({len(aucs)})" if seeds else "-")
        rows.append([f"`{contender}`", *cells])
    return markdown_table(["contender", *data.envs], rows)


def _constants_table(data: ReportData) -> str:
    """Budget, R_random and R_ref (with its source) per environment."""
    return markdown_table(
        ["environment", "budget", "R_random", "R_ref", "R_ref source"],
        [
            [env, _budget(data, env), f"{data.r_random[env]:.3f}", f"{data.r_ref[env][0]:.3f}", data.r_ref[env][1]]
            for env in data.envs
        ],
    )


def _ess_table(data: ReportData) -> str:
    """Median over seeds of each run's mean ESS fraction, per contender and environment ("" if no run recorded it)."""
    values: dict[tuple[str, str], list[float]] = defaultdict(list)
    for record in data.records:
        ess = record.ess_fractions if record.status == "done" else None
        if ess is not None and len(ess):
            values[(record.contender, record.env)].append(float(ess.mean()))
    contenders = [c for c in data.contenders if any((c, e) in values for e in data.envs)]
    if not contenders:
        return ""
    rows = [
        [
            f"`{c}`",
            *[
                f"{np.median(values[(c, e)]):.3f} ({len(values[(c, e)])})" if (c, e) in values else "-"
                for e in data.envs
            ],
        ]
        for c in contenders
    ]
    return markdown_table(["contender", *data.envs], rows)


def _budget(data: ReportData, env: str) -> int:
    """
    :return: The step budget of an environment's runs
        (:func:`~benchmarks.harness.report.collect.check_budgets` made them agree).
    """
    return next(r.budget for r in data.records if r.env == env)
