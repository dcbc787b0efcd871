"""
The Markdown page of the report (``README.md``).

The page is a sequence of sections (header, headline, goal check, ablations, wall-clock cost, per
environment, figures, runs), each rendered by its own module of :mod:`.sections`; each section is a
sequence of blocks (a heading, a paragraph, a table, a code fence). :func:`render_page` joins the
sections, blocks separated by one blank line.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from benchmarks.harness.report.collect import ReportData
from benchmarks.harness.report.goals import SuiteComparison
from benchmarks.harness.report.markdown import join_blocks
from benchmarks.harness.report.sections.ablations import ablation_section
from benchmarks.harness.report.sections.cost import cost_section
from benchmarks.harness.report.sections.figures import figures_section
from benchmarks.harness.report.sections.goal_check import goal_section, suite_goal_section
from benchmarks.harness.report.sections.header import header_section
from benchmarks.harness.report.sections.headline import headline_section
from benchmarks.harness.report.sections.per_environment import per_environment_section
from benchmarks.harness.report.sections.runs import runs_section
from benchmarks.harness.report.statistics import Statistics

#: The H1 of a page whose runs name no matrix (``--matrix``): the matrices' titles keep the
#: committed pages apart.
DEFAULT_TITLE = "Benchmark results"

#: Seeds per (contender, entry) required by the protocol; fewer is marked "first look".
FULL_SEEDS = 10


def render_page(
    data: ReportData,
    stats: Statistics,
    figures: Sequence[Path],
    out_dir: Path,
    command: str,
    reps: int,
    target: str,
    baselines: Sequence[str],
    reference: str,
    full_seeds: int = FULL_SEEDS,
    suite_goals: Sequence[SuiteComparison] = (),
    title: str = DEFAULT_TITLE,
) -> str:
    """
    :param data: Collected runs.
    :param stats: Their statistics.
    :param figures: The PNGs, in the order shown.
    :param out_dir: Folder of the page (the figures are linked relative to it).
    :param command: Command line that regenerates the page, printed at its top.
    :param reps: Bootstrap replications (quoted on the page).
    :param target: Contender tested for improvement.
    :param baselines: Contenders it is compared with.
    :param reference: Contender of the ratios (IQM and wall clock).
    :param full_seeds: Seeds per contender that the study calls complete; fewer get the "first look" banner.
        Ablations are complete at ``min(full_seeds, ABLATION_SEEDS)``, the protocol's 5.
    :param suite_goals: The protocol's goals per suite (:func:`~.goals.suite_comparisons`); when given,
        they replace the single goal check over all entries.
    :param title: The page's H1 (the matrix's ``title``).
    :return: The Markdown of ``README.md``.
    """
    return (
        join_blocks(
            header_section(data, command, reps, target, baselines, reference, full_seeds, title),
            headline_section(data, stats, target, baselines, reference),
            (
                suite_goal_section(suite_goals, stats, target, reference)
                if suite_goals
                else goal_section(stats, target, baselines, reference)
            ),
            ablation_section(data, stats, target, reference),
            cost_section(data, stats, reference),
            per_environment_section(data),
            figures_section(figures, out_dir),
            runs_section(data),
        )
        + "\n"
    )
