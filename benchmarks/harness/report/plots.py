"""
The figures of the report, drawn with rliable's plot utilities and written as PNGs.

Each ``plot_*`` function writes its files into the page's folder and returns their paths, in the
order the page shows them; :func:`draw_figures` runs them all.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # before pyplot is imported anywhere (rliable imports it)

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.lines import Line2D

from benchmarks.harness.report.collect import ReportData
from benchmarks.harness.report.statistics import METRIC_NAMES, Statistics, interval_estimates


def _colors(contenders: Sequence[str]) -> dict[str, Any]:
    """:return: Contender -> colour of seaborn's colour-blind palette, the same contender order on every figure."""
    import seaborn as sns

    palette = sns.color_palette("colorblind", n_colors=max(len(contenders), 1))
    return dict(zip(contenders, palette, strict=False))


def _eval_episodes(data: ReportData) -> int:
    """:return: Episodes per evaluation, as the first run file records it (0 if none does)."""
    for record in data.records:
        return int(record.data.get("eval", {}).get("episodes", 0))
    return 0


def plot_learning_curves(data: ReportData, out_dir: Path, reps: int, seed: int) -> list[Path]:
    """
    One PNG per environment: mean eval return of each contender with a 95% stratified-bootstrap
    CI band over seeds, plus R_random and R_ref as dashed lines.

    :param data: Collected runs (every done run, complete seed or not).
    :param out_dir: Folder of the PNGs.
    :param reps: Bootstrap replications.
    :param seed: Bootstrap seed.
    :return: The files written.
    """
    colors = _colors(data.contenders)
    paths = []
    for env in data.envs:
        score_dict = {}
        for contender in data.contenders:
            runs = data.curves[contender][env]
            if runs:
                score_dict[contender] = np.stack([runs[s] for s in sorted(runs)])[:, None, :]  # (runs, 1, evals)
        if not score_dict:
            continue
        # rliable's stratified bootstrap at each eval point (the band is pointwise)
        points, cis = interval_estimates(score_dict, lambda x: x[:, 0, :].mean(axis=0), reps=reps, seed=seed)
        fig, ax = plt.subplots(figsize=(7, 4.5))
        steps = data.timesteps[env]
        for contender in score_dict:
            n = score_dict[contender].shape[0]
            ax.plot(steps, points[contender], color=colors[contender], label=f"{contender} (n={n})", linewidth=1.8)
            ax.fill_between(steps, cis[contender][0], cis[contender][1], color=colors[contender], alpha=0.18)
        ax.axhline(data.r_random[env], color="grey", linestyle=":", linewidth=1, label="random policy")
        ax.axhline(data.r_ref[env][0], color="black", linestyle="--", linewidth=1, label="R_ref (zoo reference)")
        ax.set_xlabel("environment steps")
        ax.set_ylabel(f"mean eval return ({_eval_episodes(data)} episodes)")
        ax.set_title(f"{env}: mean over seeds, 95% bootstrap CI")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="best")
        fig.tight_layout()
        path = out_dir / f"curves_{env}.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        paths.append(path)
    return paths


def plot_aggregates(stats: Statistics, out_dir: Path) -> list[Path]:
    """
    Interval plots of IQM / mean / optimality gap, one PNG per metric (AUC, final).

    :param stats: The statistics.
    :param out_dir: Folder of the PNGs.
    :return: The files written.
    """
    from rliable import plot_utils

    colors = _colors(stats.aggregated)
    paths = []
    for metric, per_contender in stats.aggregates.items():
        if not per_contender:
            continue
        algorithms = list(per_contender)
        points = {c: np.array([iv.point for iv in per_contender[c]]) for c in algorithms}
        cis = {
            c: np.array([[iv.low for iv in per_contender[c]], [iv.high for iv in per_contender[c]]]) for c in algorithms
        }
        fig, axes = plot_utils.plot_interval_estimates(
            points,
            cis,
            metric_names=list(METRIC_NAMES),
            algorithms=algorithms,
            colors=colors,
            xlabel="",
            subfigure_width=3.6,
            row_height=0.6,
        )
        for ax in np.atleast_1d(axes):
            ax.set_xlabel(f"normalised {metric}", fontsize="medium")
        path = out_dir / f"aggregate_{metric.lower()}.png"
        fig.savefig(path, dpi=110, bbox_inches="tight")
        plt.close(fig)
        paths.append(path)
    return paths


def plot_probability_of_improvement(stats: Statistics, out_dir: Path) -> list[Path]:
    """
    P(X > Y) on normalised AUC with 95% CIs, for every tested pair.

    :param stats: The statistics.
    :param out_dir: Folder of the PNG.
    :return: The file written (none when no pair was tested).
    """
    from rliable import plot_utils

    pairs = stats.poi.get("AUC", {})
    if not pairs:
        return []
    points = {f"{x},{y}": np.array(iv.point) for (x, y), iv in pairs.items()}
    cis = {f"{x},{y}": np.array([[iv.low], [iv.high]]) for (x, y), iv in pairs.items()}
    ax = plot_utils.plot_probability_of_improvement(points, cis, figsize=(5, 0.6 + 0.45 * len(points)))
    ax.set_title("P(X > Y), normalised AUC", fontsize="medium")
    fig = ax.get_figure()
    path = out_dir / "probability_of_improvement.png"
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return [path]


def plot_performance_profiles(stats: Statistics, out_dir: Path) -> list[Path]:
    """
    Score distributions (fraction of runs above tau) for AUC and final, with 95% CIs.

    :param stats: The statistics.
    :param out_dir: Folder of the PNG.
    :return: The file written (none when no contender is aggregated).
    """
    from rliable import plot_utils

    if not stats.profiles:
        return []
    colors = _colors(stats.aggregated)
    fig, axes = plt.subplots(1, len(stats.profiles), figsize=(6 * len(stats.profiles), 4.2), squeeze=False)
    for ax, (metric, (tau, points, cis)) in zip(axes[0], stats.profiles.items(), strict=True):
        plot_utils.plot_performance_profiles(
            points,
            tau,
            performance_profile_cis=cis,
            colors=colors,
            xlabel=rf"normalised {metric} ($\tau$)",
            ax=ax,
            labelsize="medium",
            ticklabelsize="small",
        )
        ax.set_title(f"performance profile, {metric}", fontsize="medium")
        handles = [Line2D([0], [0], color=colors[c], linewidth=2) for c in points]
        ax.legend(handles, list(points), fontsize=8, loc="upper right")
    fig.tight_layout()
    path = out_dir / "performance_profiles.png"
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return [path]


def plot_aggregate_curve(data: ReportData, stats: Statistics, out_dir: Path, reps: int, seed: int) -> list[Path]:
    """
    IQM of the normalised score at each eval point (fraction of budget) across environments.

    :param data: Collected runs.
    :param stats: The statistics (which contenders are aggregated).
    :param out_dir: Folder of the PNG.
    :param reps: Bootstrap replications (a quarter of them, at least 50, are drawn: one IQM per eval point).
    :param seed: Bootstrap seed.
    :return: The file written (none when nothing is aggregated or the environments' eval grids differ in length).
    """
    from rliable import metrics as rly_metrics

    if not stats.aggregated or len({len(t) for t in data.timesteps.values()}) != 1:
        return []
    score_dict = {
        c: np.stack(
            [np.stack([data.normalized(c, env, s) for env in data.envs]) for s in data.complete_seeds[c]]
        )  # (seeds, envs, evals)
        for c in stats.aggregated
    }
    n_evals = next(iter(score_dict.values())).shape[-1]

    def iqm_per_point(x: np.ndarray) -> np.ndarray:
        return np.array([rly_metrics.aggregate_iqm(x[..., i]) for i in range(n_evals)])

    # rliable's sample-efficiency curve: IQM per eval point through get_interval_estimates (pointwise band)
    points, cis = interval_estimates(score_dict, iqm_per_point, reps=max(reps // 4, 50), seed=seed)
    colors = _colors(stats.aggregated)
    fractions = np.arange(1, n_evals + 1) / n_evals
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for contender in stats.aggregated:
        ax.plot(fractions, points[contender], color=colors[contender], label=contender, linewidth=1.8)
        ax.fill_between(fractions, cis[contender][0], cis[contender][1], color=colors[contender], alpha=0.18)
    ax.axhline(1.0, color="black", linestyle="--", linewidth=1)
    ax.set_xlabel("fraction of the step budget")
    ax.set_ylabel("IQM normalised score")
    ax.set_title("all environments: IQM normalised score, 95% bootstrap CI")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    path = out_dir / "aggregate_curve.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return [path]


def draw_figures(data: ReportData, stats: Statistics, out_dir: Path, reps: int, seed: int) -> list[Path]:
    """
    Every figure of the page.

    :param data: Collected runs.
    :param stats: Their statistics.
    :param out_dir: Folder of the PNGs.
    :param reps: Bootstrap replications of the curves' bands.
    :param seed: Bootstrap seed.
    :return: The files written, in the order the page shows them.
    """
    return [
        *plot_aggregates(stats, out_dir),
        *plot_probability_of_improvement(stats, out_dir),
        *plot_performance_profiles(stats, out_dir),
        *plot_aggregate_curve(data, stats, out_dir, reps, seed),
        *plot_learning_curves(data, out_dir, reps, seed),
    ]
