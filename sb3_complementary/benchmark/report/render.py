"""
The Markdown page of the report (``README.md``).

The page is a sequence of sections (header, headline, goal check, ablations, wall-clock cost, per
environment, figures, runs); each section is a sequence of blocks (a heading, a paragraph, a table,
a code fence). Every section and every table has its own function that returns its Markdown;
:func:`render_page` joins the sections, blocks separated by one blank line.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from sb3_complementary.benchmark.metrics import auc, final_score, mean_pm_std
from sb3_complementary.benchmark.report.collect import ReportData
from sb3_complementary.benchmark.report.goals import SuiteComparison
from sb3_complementary.benchmark.report.statistics import Statistics

#: Seeds per (contender, entry) required by the protocol; fewer is marked "first look".
FULL_SEEDS = 10
#: Seeds the protocol plans for an ablation (never more than the study's own ``full_seeds``).
ABLATION_SEEDS = 5

#: Goal of docs/benchmarks/protocol.md.
GOAL_IQM_RATIO = 1.10
GOAL_WALLCLOCK_RATIO = 1.15
#: The cost goal of the protocol's suites: CPU time against the reference's, side by side.
GOAL_CPU_RATIO = 1.10


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
    :return: The Markdown of ``README.md``.
    """
    return (
        _blocks(
            _header_section(data, command, reps, target, baselines, reference, full_seeds),
            _headline_section(data, stats, target, baselines, reference),
            (
                _suite_goal_section(suite_goals, stats, target, reference)
                if suite_goals
                else _goal_section(stats, target, baselines, reference)
            ),
            _ablation_section(data, stats, target, reference),
            _cost_section(data, stats, reference),
            _per_environment_section(data),
            _figures_section(figures, out_dir),
            _runs_section(data),
        )
        + "\n"
    )


# --------------------------------------------------------------------------- sections


def _seeds_per_entry(data: ReportData, contender: str) -> dict[str, int]:
    """:return: Done seeds of ``contender`` per entry it has run on (entries with none are left out)."""
    return {env: len(data.curves[contender][env]) for env in data.envs if data.curves.get(contender, {}).get(env)}


def _header_section(
    data: ReportData,
    command: str,
    reps: int,
    target: str,
    baselines: Sequence[str],
    reference: str,
    full_seeds: int,
) -> str:
    """Title, the command that regenerates the page, what it is made from, and the first-look banners."""
    n_done = sum(r.status == "done" for r in data.records)
    n_failed = sum(r.status == "failed" for r in data.records)
    unreadable = f", plus {len(data.corrupt)} unreadable" if data.corrupt else ""
    # Both banners count every contender with runs, from the run files rather than the
    # statistics: one with no seed done on every entry is not aggregated, so it has no row, and
    # the banner is the only place the page says it is coming. The headline's contenders decide
    # the first look; the others are the ablations.
    headline = [c for c in data.contenders if c in (target, reference, *baselines)]
    min_seeds = min((len(data.complete_seeds[c]) for c in headline), default=0)
    first_look = (
        f"> **First look, not the study:** some contenders have fewer than {full_seeds} complete seeds "
        f"(fewest: {min_seeds}). Numbers will move as the matrix fills."
        if min_seeds < full_seeds
        else ""
    )
    ablation_seeds = min(full_seeds, ABLATION_SEEDS)
    short = [c for c in data.contenders if c not in headline and len(data.complete_seeds[c]) < ablation_seeds]
    # An ablation with its seeds done on some entries only was left off the others on purpose: it
    # is not filling in, and only the per-environment tables show it.
    per_entry = {c: _seeds_per_entry(data, c) for c in short}
    partial = [
        c
        for c in short
        if len(per_entry[c]) < len(data.envs) and min(per_entry[c].values(), default=0) >= ablation_seeds
    ]
    filling = [c for c in short if c not in partial]
    counts = ", ".join(f"`{c}` ({len(data.complete_seeds[c])})" for c in filling)
    no_row = (
        " A contender at 0 has no row yet: none of its seeds is done on every entry."
        if any(not data.complete_seeds[c] for c in filling)
        else ""
    )
    filling_banner = (
        f"> **Ablations still filling in** (complete seeds of {ablation_seeds} planned): {counts}. "
        f"Their rows are a first look.{no_row}"
        if filling
        else ""
    )
    partial_note = ", ".join(f"`{c}` ({len(per_entry[c])} of {len(data.envs)})" for c in partial)
    partial_banner = (
        f"> **Ablations run on some entries only** (entries with {ablation_seeds} seeds done): {partial_note}. "
        "They have no aggregate row; the per-environment tables show them."
        if partial
        else ""
    )
    return _blocks(
        "# Benchmark results",
        "Regenerate every table and figure of this page from the run files:",
        f"```bash\n{command}\n```",
        f"Generated from {len(data.records)} run files ({n_done} done, {n_failed} failed{unreadable}); "
        f"stratified bootstrap 95% CIs with {reps} replications. Protocol: `docs/benchmarks/protocol.md`; "
        "the runs are produced by `python -m sb3_complementary.benchmark`.",
        first_look,
        filling_banner,
        partial_banner,
    )


def _headline_section(
    data: ReportData, stats: Statistics, target: str, baselines: Sequence[str], reference: str
) -> str:
    """Aggregates of every aggregated contender, and P(X > Y) between the headline's contenders."""
    poi_table = _headline_poi_table(stats, _headline_contenders(stats, target, baselines, reference))
    return _blocks(
        "## Headline",
        "Normalised score `(R - R_random) / (R_ref - R_random)` per environment; **AUC** = mean over the "
        "eval points (sample efficiency), **final** = mean over the last 3 eval points. Aggregated over "
        "environments and the seeds done on every environment.",
        _aggregates_table(data, stats, reference),
        "Probability of improvement P(X > Y) (rliable; per-environment Mann-Whitney, averaged):" if poi_table else "",
        poi_table,
    )


def _goal_section(stats: Statistics, target: str, baselines: Sequence[str], reference: str) -> str:
    """The goal of docs/benchmarks/protocol.md, criterion by criterion."""
    return _blocks(
        f"## Goal check: `{target}` against `{reference}` (docs/benchmarks/protocol.md)",
        _goal_table(stats, target, baselines, reference),
    )


def _suite_goal_section(comparisons: Sequence[SuiteComparison], stats: Statistics, target: str, reference: str) -> str:
    """The protocol's goals suite by suite, then the cost goal."""
    cpu = stats.cpu_ratio.get(target)
    return _blocks(
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
    :param comparisons: :func:`~.goals.suite_comparisons`'s output.
    :return: One heading line and one table per suite: ratio, P and the goal's verdict per contender.
    """
    blocks = []
    for suite in dict.fromkeys(c.suite for c in comparisons):
        rows = [c for c in comparisons if c.suite == suite]
        blocks.append(f"**{suite} suite** ({', '.join(rows[0].entries)})")
        blocks.append(
            _table(
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
    return _blocks(*blocks)


def _ablation_section(data: ReportData, stats: Statistics, target: str, reference: str) -> str:
    """The ablations of the target ("" when there is none, or the target has no complete seed)."""
    if not (stats.ablations and target in stats.aggregated):
        return ""
    return _blocks(
        f"## Ablations: each one changes one setting of `{target}`",
        _ablation_table(data, stats, target, reference),
    )


def _cost_section(data: ReportData, stats: Statistics, reference: str) -> str:
    """Wall-clock and CPU-time ratios to the reference."""
    return _blocks(
        "## Wall-clock cost",
        f"Ratio of training wall-clock seconds to `{reference}` on the same environment and seed: median "
        "[min, max] (n pairs). Training seconds are the time inside `model.learn()` minus the evaluations "
        "(see `sb3_complementary/benchmark/run.py`). Only ratios are quoted: the machines are shared and noisy.",
        _cost_table(data, stats),
    )


def _per_environment_section(data: ReportData) -> str:
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
    return _blocks(
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


def _figures_section(figures: Sequence[Path], out_dir: Path) -> str:
    """Every figure, linked relative to the page."""
    return _blocks("## Figures", *(f"![{path.stem}]({_relative(path, out_dir)})" for path in figures))


def _runs_section(data: ReportData) -> str:
    """Completeness: seeds done and failed, failed, unreadable and left-out runs, code and library versions."""
    failed = sorted((r for r in data.records if r.status == "failed"), key=lambda r: r.run_id)
    failed_blocks = (
        (
            _table(["run file", "error"], [[f"`{r.path.name}`", r.error[:300]] for r in failed]),
            "The full traceback is in each run file (`traceback`). Failed runs are not in the aggregates.",
        )
        if failed
        else ("None.",)
    )
    unreadable_blocks = (
        (
            "### Unreadable run files",
            "These files are half-written or corrupt; the runner redoes them:",
            "\n".join(f"- `{path.name}`" for path in data.corrupt),
        )
        if data.corrupt
        else ()
    )
    left_out = sorted(
        (r for r in data.records if r.status == "done" and r.seed not in data.complete_seeds.get(r.contender, [])),
        key=lambda r: r.run_id,
    )
    left_out_blocks = (
        (
            "### Done runs left out of the aggregates",
            "Their seed is not done on every environment for that contender yet (they are in the learning curves):",
            ", ".join(f"`{r.run_id}`" for r in left_out),
        )
        if left_out
        else ()
    )
    return _blocks(
        "## Runs",
        "Seeds done (failed) per contender and environment:",
        _status_table(data),
        "### Failed runs",
        *failed_blocks,
        *unreadable_blocks,
        *left_out_blocks,
        "### Code and library versions",
        _versions_table(data),
    )


# --------------------------------------------------------------------------- tables


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
    return _table(
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
    return _table(["X", "Y", "P(X > Y) on AUC [95% CI]", "P(X > Y) on final [95% CI]"], rows)


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
    return _table(["target", "measured", "met?"], rows)


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
    return _table(
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
    return _table(["contender", *data.envs, "all environments", "CPU-time ratio, all"], rows)


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
    return _table(["contender", *data.envs], rows)


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
    return _table(["contender", *data.envs], rows)


def _constants_table(data: ReportData) -> str:
    """Budget, R_random and R_ref (with its source) per environment."""
    return _table(
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
    return _table(["contender", *data.envs], rows)


def _status_table(data: ReportData) -> str:
    """Seeds done (and failed) per contender and environment, and the complete seeds."""
    status: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    for record in data.records:
        status[(record.contender, record.env)][0 if record.status == "done" else 1] += 1

    def cell(contender: str, env: str) -> str:
        done, failed = status[(contender, env)]
        return f"{done}" + (f" ({failed} failed)" if failed else "")

    return _table(
        ["contender", *data.envs, "complete seeds"],
        [
            [f"`{c}`", *[cell(c, e) for e in data.envs], ",".join(map(str, data.complete_seeds[c])) or "none"]
            for c in data.contenders
        ],
    )


def _versions_table(data: ReportData) -> str:
    """Git commit of the runner per contender (marked when dirty), then the library versions the runs recorded."""
    by_contender: dict[str, set[str]] = defaultdict(set)
    libraries: dict[str, set[str]] = defaultdict(set)
    for record in data.records:
        code = record.data.get("code", {})
        commit = code.get("git_commit") or "unknown"
        dirty = f" (dirty, package {code.get('package_sha256')})" if code.get("git_dirty") else ""
        label = f"{commit[:10]}{dirty}"
        by_contender[record.contender].add(label)
        for name, version in record.data.get("versions", {}).items():
            libraries[name].add(str(version))
    rows = [[f"`{c}`", ", ".join(sorted(by_contender[c]))] for c in data.contenders]
    table = _table(["contender", "code (git commit of the runner)"], rows)
    libs = "; ".join(f"{name} {', '.join(sorted(versions))}" for name, versions in sorted(libraries.items()))
    return table + "\n\nLibraries: " + libs + "."


# --------------------------------------------------------------------------- Markdown helpers


def _blocks(*blocks: str) -> str:
    """:return: The non-empty blocks, separated by a blank line (an optional block is passed as "")."""
    return "\n\n".join(block for block in blocks if block)


def _table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """:return: A Markdown table; ``|`` and newlines in cells are escaped so that they cannot break it."""

    def cell(value: Any) -> str:
        return str(value).replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(map(cell, header)) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(map(cell, row)) + " |" for row in rows]
    return "\n".join(lines)


def _headline_contenders(stats: Statistics, target: str, baselines: Sequence[str], reference: str) -> list[str]:
    """:return: The aggregated contenders of the headline comparison: target, reference and baselines."""
    return [c for c in stats.aggregated if c in (target, reference, *baselines)]


def _verdict(ok: bool) -> str:
    """:return: The "met?" cell of the goal table."""
    return "**yes**" if ok else "**no**"


def _budget(data: ReportData, env: str) -> int:
    """:return: The step budget of an environment's runs (:func:`.collect.check_budgets` made them agree)."""
    return next(r.budget for r in data.records if r.env == env)


def _relative(path: Path, base: Path) -> str:
    """:return: ``path`` relative to ``base`` when it is inside it, else as given."""
    try:
        return str(path.resolve().relative_to(base.resolve()))
    except ValueError:
        return str(path)
