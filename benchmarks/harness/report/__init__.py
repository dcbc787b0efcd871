"""
The benchmark report: statistics over the run files, written as ``README.md`` + PNGs.

::

    python -m benchmarks.report --runs docs/benchmarks/runs --out docs/benchmarks

It reads every run file of ``--runs``, normalises each eval curve per environment
(:mod:`benchmarks.harness.normalize`), reduces it to AUC and final score
(:mod:`benchmarks.harness.metrics`) and aggregates with rliable's metrics and plots, with
rliable's stratified bootstrap CIs (``rliable.library.get_interval_estimates``, ``--reps``
replications, fixed ``--bootstrap-seed``):

- IQM, mean and optimality gap of AUC and of the final score, per contender;
- probability of improvement of the target contender over each baseline (and of every
  contender over DQN, for the ablations);
- performance profiles;
- learning curves per environment (mean return with a 95% bootstrap CI band);
- the wall-clock cost: ratio of training seconds to DQN on the same entry and seed.

Rules that keep the page honest:

- runs of one environment with different budgets or eval grids are never aggregated: the
  report stops with an error naming them;
- failed runs and unreadable run files are listed, never silently dropped;
- aggregates need the same environments for every run, so a contender is aggregated over its
  seeds that are done on every environment; runs of other seeds are listed as left out.

One concept per module:

- :mod:`.collect`: reading and checking the run files (:class:`ReportData`, :func:`collect`);
- :mod:`.statistics`: the rliable calls, IQM ratios and wall-clock ratios (:func:`compute_statistics`);
- :mod:`.plots`: the PNGs (:func:`draw_figures`);
- :mod:`.goals`: the protocol's goals suite by suite (:func:`suite_comparisons`);
- :mod:`.page`: the Markdown page, joined from its sections (:func:`render_page`);
- :mod:`.sections`: one module per section of the page, one function per section and per table;
- :mod:`.markdown`: the Markdown blocks and tables the sections are made of;
- :mod:`.cli`: :func:`build_report`, which runs the steps above, and the command line (:func:`main`).
"""

from benchmarks.harness.report.cli import build_report, main
from benchmarks.harness.report.collect import (
    PREFERRED_ORDER,
    BudgetMismatchError,
    ReportData,
    check_budgets,
    collect,
    order_contenders,
)
from benchmarks.harness.report.goals import (
    PROTOCOL_SUITES,
    REFERENCE_RATIO_GOAL,
    SuiteComparison,
    parse_suites,
    suite_comparisons,
)
from benchmarks.harness.report.page import FULL_SEEDS, render_page
from benchmarks.harness.report.plots import (
    draw_figures,
    plot_aggregate_curve,
    plot_aggregates,
    plot_learning_curves,
    plot_performance_profiles,
    plot_probability_of_improvement,
)
from benchmarks.harness.report.sections.goal_check import (
    GOAL_CPU_RATIO,
    GOAL_IQM_RATIO,
    GOAL_WALLCLOCK_RATIO,
    suite_goal_tables,
)
from benchmarks.harness.report.statistics import (
    METRIC_NAMES,
    Interval,
    Ratio,
    Statistics,
    compute_statistics,
    interval_estimates,
    iqm_ratios,
    performance_profiles,
    summarize_ratios,
    to_interval,
    wallclock_ratios,
)

__all__ = [
    "FULL_SEEDS",
    "GOAL_CPU_RATIO",
    "GOAL_IQM_RATIO",
    "GOAL_WALLCLOCK_RATIO",
    "METRIC_NAMES",
    "PREFERRED_ORDER",
    "PROTOCOL_SUITES",
    "REFERENCE_RATIO_GOAL",
    "BudgetMismatchError",
    "Interval",
    "Ratio",
    "ReportData",
    "Statistics",
    "SuiteComparison",
    "build_report",
    "check_budgets",
    "collect",
    "compute_statistics",
    "draw_figures",
    "interval_estimates",
    "iqm_ratios",
    "main",
    "order_contenders",
    "parse_suites",
    "performance_profiles",
    "plot_aggregate_curve",
    "plot_aggregates",
    "plot_learning_curves",
    "plot_performance_profiles",
    "plot_probability_of_improvement",
    "render_page",
    "suite_comparisons",
    "suite_goal_tables",
    "summarize_ratios",
    "to_interval",
    "wallclock_ratios",
]
