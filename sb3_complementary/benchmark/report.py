"""
The benchmark report: statistics over the run files, written as ``README.md`` + PNGs.

::

    python -m sb3_complementary.benchmark.report --runs docs/benchmarks/runs --out docs/benchmarks

It reads every run file of ``--runs``, normalises each eval curve per environment
(:mod:`.normalize`), reduces it to AUC and final score (:mod:`.metrics`) and aggregates with
rliable's metrics and plots, with rliable's stratified bootstrap CIs
(``rliable.library.get_interval_estimates``, ``--reps`` replications, fixed ``--bootstrap-seed``):

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
"""

from __future__ import annotations

import argparse
import shlex
import sys
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # before pyplot is imported anywhere (rliable imports it)

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.lines import Line2D

from sb3_complementary.benchmark.metrics import auc, final_score, mean_pm_std
from sb3_complementary.benchmark.normalize import ensure_random_scores, load_random_scores, normalized_score
from sb3_complementary.benchmark.store import RunRecord, scan_runs

#: Contenders listed first, in this order; the others follow alphabetically.
PREFERRED_ORDER = ("dqn", "per", "complementary")

#: Seeds per (contender, entry) required by the protocol; fewer is marked "first look".
FULL_SEEDS = 10

#: Goal of docs/benchmarks/protocol.md.
GOAL_IQM_RATIO = 1.10
GOAL_WALLCLOCK_RATIO = 1.15

METRIC_NAMES = ("IQM", "Mean", "Optimality Gap")


class BudgetMismatchError(ValueError):
    """Runs of one environment that do not share a budget or eval grid: they cannot be aggregated."""


@dataclass
class Interval:
    """A point estimate with its 95% CI."""

    point: float
    low: float
    high: float

    def fmt(self, digits: int = 3) -> str:
        """:return: ``"0.812 [0.701, 0.903]"``."""
        return f"{self.point:.{digits}f} [{self.low:.{digits}f}, {self.high:.{digits}f}]"


@dataclass
class Ratio:
    """Summary of per-seed ratios."""

    n: int
    median: float
    low: float
    high: float

    def fmt(self) -> str:
        """:return: ``"1.07 [0.98, 1.21] (n=10)"``."""
        if self.n == 0:
            return "n/a"
        return f"{self.median:.2f} [{self.low:.2f}, {self.high:.2f}] (n={self.n})"


@dataclass
class ReportData:
    """
    Everything the page and the figures are made from.

    :param records: All whole run files (done and failed).
    :param corrupt: Run files that could not be read.
    :param envs: Environment (suite entry) names, sorted.
    :param contenders: Contender names, in display order.
    :param r_random: R_random per environment.
    :param r_ref: R_ref per environment, with its source.
    :param curves: ``curves[contender][env]``: ``{seed: raw mean returns (n_evals,)}`` of done runs.
    :param timesteps: Eval grid per environment, shape ``(n_evals,)``.
    :param complete_seeds: Per contender, the seeds done on every environment (used in aggregates).
    """

    records: list[RunRecord]
    corrupt: list[Path]
    envs: list[str]
    contenders: list[str]
    r_random: dict[str, float]
    r_ref: dict[str, tuple[float, str]]
    curves: dict[str, dict[str, dict[int, np.ndarray]]]
    timesteps: dict[str, np.ndarray]
    complete_seeds: dict[str, list[int]] = field(default_factory=dict)

    def normalized(self, contender: str, env: str, seed: int) -> np.ndarray:
        """:return: Normalised curve of one run, shape ``(n_evals,)``."""
        return normalized_score(self.curves[contender][env][seed], self.r_random[env], self.r_ref[env][0])

    def score_matrix(self, contender: str, metric: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
        """
        :param contender: Contender name.
        :param metric: :func:`~.metrics.auc` or :func:`~.metrics.final_score`.
        :return: Scores of its complete seeds, shape ``(n_seeds, n_envs)`` (rliable's layout).
        """
        seeds = self.complete_seeds[contender]
        return np.array(
            [[float(metric(self.normalized(contender, env, seed))) for env in self.envs] for seed in seeds],
            dtype=np.float64,
        ).reshape(len(seeds), len(self.envs))


def order_contenders(names: Sequence[str]) -> list[str]:
    """:return: ``names`` with :data:`PREFERRED_ORDER` first, then alphabetical."""
    unique = sorted(set(names))
    return [n for n in PREFERRED_ORDER if n in unique] + [n for n in unique if n not in PREFERRED_ORDER]


def check_budgets(records: Sequence[RunRecord]) -> None:
    """
    Refuse to aggregate runs of one environment with different budgets, eval grids or R_ref.

    :param records: All whole run files.
    :raises BudgetMismatchError: naming the runs of each mismatching group.
    """
    problems = []
    by_env: dict[str, list[RunRecord]] = defaultdict(list)
    for record in records:
        by_env[record.env].append(record)
    for env, group in sorted(by_env.items()):
        checks: list[tuple[str, Callable[[RunRecord], Any], list[RunRecord]]] = [
            ("budget", lambda r: r.budget, group),
            ("eval grid", lambda r: tuple(r.timesteps.tolist()), [r for r in group if r.status == "done"]),
            ("R_ref", lambda r: r.r_ref, group),
        ]
        for what, key, members in checks:
            values: dict[Any, list[str]] = defaultdict(list)
            for record in members:
                values[key(record)].append(record.path.name)
            if len(values) > 1:
                lines = [
                    f"    {what} {_short(value)}: {len(files)} run(s): {', '.join(sorted(files))}"
                    for value, files in sorted(values.items(), key=lambda kv: -len(kv[1]))
                ]
                problems.append(f"  {env}: runs with different {what}s:\n" + "\n".join(lines))
    if problems:
        raise BudgetMismatchError(
            "refusing to aggregate runs with mismatched budgets (move the odd ones to another folder):\n"
            + "\n".join(problems)
        )


def _short(value: Any) -> str:
    if isinstance(value, tuple) and len(value) > 4:
        return f"({value[0]}, {value[1]}, ..., {value[-1]}; {len(value)} points)"
    return str(value)


def _evaluated_env(env: dict[str, Any]) -> dict[str, Any]:
    """The env a run was evaluated on (its R_random env): recorded ``eval_env_kwargs`` merged over ``env_kwargs``."""
    kwargs = {**env["env_kwargs"], **(env.get("eval_env_kwargs") or {})}
    return {"env_id": env["env_id"], "env_kwargs": kwargs, "wrappers": env["wrappers"]}


def collect(runs_dir: str | Path) -> ReportData:
    """
    Read and check the run files of a folder.

    :param runs_dir: The runs folder.
    :return: The data of the report.
    :raises ValueError: if there is no run file.
    :raises BudgetMismatchError: if runs of one environment cannot be compared.
    """
    records, corrupt = scan_runs(runs_dir)
    if not records:
        raise ValueError(f"no readable run file in {runs_dir}" + (f" ({len(corrupt)} corrupt)" if corrupt else ""))
    check_budgets(records)
    envs = sorted({r.env for r in records})
    contenders = order_contenders([r.contender for r in records])

    r_random_cache = load_random_scores(runs_dir)
    missing = [env for env in envs if env not in r_random_cache]
    if missing:  # the runner caches these; measure here only for run folders made without it
        described = {r.env: _evaluated_env(r.data["env"]) for r in records}
        r_random_cache = ensure_random_scores(runs_dir, [(env, described[env]) for env in missing], 100, 0)
    r_random = {env: r_random_cache[env].mean for env in envs}
    r_ref = {}
    for record in records:
        r_ref[record.env] = (record.r_ref, record.r_ref_source)

    curves: dict[str, dict[str, dict[int, np.ndarray]]] = {c: {e: {} for e in envs} for c in contenders}
    timesteps: dict[str, np.ndarray] = {}
    for record in records:
        if record.status == "done":
            curves[record.contender][record.env][record.seed] = record.mean_returns
            timesteps[record.env] = record.timesteps
    data = ReportData(
        records=records,
        corrupt=corrupt,
        envs=envs,
        contenders=contenders,
        r_random=r_random,
        r_ref=r_ref,
        curves=curves,
        timesteps=timesteps,
    )
    for contender in contenders:
        seed_sets = [set(curves[contender][env]) for env in envs]
        data.complete_seeds[contender] = sorted(set.intersection(*seed_sets)) if seed_sets else []
    return data


# --------------------------------------------------------------------------- statistics


@dataclass
class Statistics:
    """rliable outputs used by the page and the figures."""

    aggregated: list[str]
    scores: dict[str, dict[str, np.ndarray]]  # metric name -> contender -> (n_seeds, n_envs)
    aggregates: dict[str, dict[str, list[Interval]]]  # metric -> contender -> [IQM, mean, OG]
    poi: dict[str, dict[tuple[str, str], Interval]]  # metric -> (x, y) -> P(X > Y)
    iqm_ratio: dict[str, Interval]  # contender -> IQM(AUC) / IQM(AUC of reference)
    ablations: list[str]  # aggregated contenders outside the headline (target, reference, baselines)
    ablation_ratio: dict[str, Interval]  # ablation -> IQM(AUC) / IQM(AUC of target)
    profiles: dict[str, tuple[np.ndarray, dict[str, np.ndarray], dict[str, np.ndarray]]]
    wallclock: dict[str, dict[str, Ratio]]  # contender -> env (or "all") -> ratio
    cpu_ratio: dict[str, Ratio]  # contender -> pooled CPU-time ratio


@contextmanager
def _seeded_global_rng(seed: int) -> Iterator[None]:
    """
    Seed NumPy's *global* generator for one rliable call, then restore the caller's state.

    rliable's stratified bootstraps draw their resampling indices with ``np.random.choice``
    (the global generator) and ignore their ``random_state`` argument, so the only way to make
    the page reproducible is to seed the global generator right before each call that resamples.
    """
    state = np.random.get_state()
    np.random.seed(seed)
    try:
        yield
    finally:
        np.random.set_state(state)


def interval_estimates(
    score_dict: Mapping[str, np.ndarray | Sequence[np.ndarray]],
    func: Callable[..., Any],
    reps: int,
    seed: int = 0,
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """
    rliable's ``get_interval_estimates`` (stratified bootstrap, percentile 95% CIs), made reproducible.

    Each key gets its own call with the global generator seeded with ``seed``, so a contender's
    CI does not depend on which other contenders (or pairs) are on the page.

    :param score_dict: Key -> scores ``(n_runs, n_tasks, ...)``, or key -> a tuple of such arrays
        (possibly with different numbers of runs), resampled independently, each stratified by task
        (e.g. ``"x,y" -> (scores_x, scores_y)`` for the probability of improvement).
    :param func: Aggregate, e.g. ``rliable.metrics.aggregate_iqm``; called as ``func(*arrays)``.
    :param reps: Bootstrap replications.
    :param seed: Seed of NumPy's global generator before each call.
    :return: ``(points, intervals)``: key -> ``func`` of the scores, key -> ``(2, ...)`` (lower row,
        upper row), as rliable returns them (they feed ``rliable.plot_utils`` directly).
    """
    from rliable import library

    points: dict[str, np.ndarray] = {}
    intervals: dict[str, np.ndarray] = {}
    for key, scores in score_dict.items():
        with _seeded_global_rng(seed):
            point, ci = library.get_interval_estimates({key: scores}, func, reps=reps)
        points[key], intervals[key] = point[key], ci[key]
    return points, intervals


def _interval(point: Any, ci: np.ndarray, index: int | None = None) -> Interval:
    point_arr = np.asarray(point, dtype=np.float64).reshape(-1)
    ci_arr = np.asarray(ci, dtype=np.float64).reshape(2, -1)
    i = 0 if index is None else index
    return Interval(float(point_arr[i]), float(ci_arr[0, i]), float(ci_arr[1, i]))


def _ratio(values: Sequence[float]) -> Ratio:
    if not values:
        return Ratio(0, float("nan"), float("nan"), float("nan"))
    arr = np.asarray(values, dtype=np.float64)
    return Ratio(len(arr), float(np.median(arr)), float(arr.min()), float(arr.max()))


def performance_profiles(
    score_dict: Mapping[str, np.ndarray], tau: np.ndarray, reps: int, seed: int = 0
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """
    rliable's ``create_performance_profile`` (score distributions: fraction of (run, task) scores
    above each threshold, with stratified-bootstrap 95% CIs), one seeded call per contender as in
    :func:`interval_estimates`.

    :param score_dict: Contender -> scores ``(n_runs, n_tasks)``.
    :param tau: Thresholds.
    :param reps: Bootstrap replications.
    :param seed: Seed of NumPy's global generator before each call.
    :return: ``(profiles, cis)``: contender -> ``(len(tau),)`` and contender -> ``(2, len(tau))``.
    """
    from rliable import library

    profiles: dict[str, np.ndarray] = {}
    cis: dict[str, np.ndarray] = {}
    for key, scores in score_dict.items():
        with _seeded_global_rng(seed):
            profile, ci = library.create_performance_profile({key: scores}, tau, reps=reps)
        profiles[key], cis[key] = profile[key], ci[key]
    return profiles, cis


def wallclock_ratios(
    records: Sequence[RunRecord], reference: str, field_name: str = "train_seconds"
) -> dict[str, dict[str, list[float]]]:
    """
    Training-time ratio of each contender to ``reference`` on the same environment and seed.

    :param records: Run files.
    :param reference: Contender the times are divided by (``"dqn"``).
    :param field_name: ``"train_seconds"`` (wall clock) or ``"train_cpu_seconds"``.
    :return: ``ratios[contender][env]``: list of per-seed ratios (only pairs where both are done).
    """
    seconds: dict[tuple[str, str, int], float] = {}
    for record in records:
        if record.status == "done":
            seconds[(record.contender, record.env, record.seed)] = float(record.data["timing"][field_name])
    ratios: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for (contender, env, seed), value in sorted(seconds.items()):
        base = seconds.get((reference, env, seed))
        if contender != reference and base is not None and base > 0:
            ratios[contender][env].append(value / base)
    return ratios


def compute_statistics(
    data: ReportData,
    reps: int = 2000,
    seed: int = 0,
    target: str = "complementary",
    baselines: Sequence[str] = ("dqn", "per"),
    reference: str = "dqn",
) -> Statistics:
    """
    All rliable statistics of the report.

    :param data: Collected runs.
    :param reps: Bootstrap replications.
    :param seed: Seed of the bootstrap (the page is reproducible).
    :param target: Contender whose improvement is tested.
    :param baselines: Contenders it is compared with.
    :param reference: Contender of the IQM ratio and the wall-clock ratio.
    :return: The statistics.
    """
    from rliable import metrics as rly_metrics

    aggregated = [c for c in data.contenders if data.complete_seeds[c]]
    scores = {
        "AUC": {c: data.score_matrix(c, auc) for c in aggregated},
        "final": {c: data.score_matrix(c, final_score) for c in aggregated},
    }

    def aggregate_func(x: np.ndarray) -> np.ndarray:
        return np.array(
            [
                rly_metrics.aggregate_iqm(x),
                rly_metrics.aggregate_mean(x),
                rly_metrics.aggregate_optimality_gap(x),
            ]
        )

    aggregates: dict[str, dict[str, list[Interval]]] = {}
    for metric, score_dict in scores.items():
        aggregates[metric] = {}
        if not score_dict:
            continue
        points, cis = interval_estimates(score_dict, aggregate_func, reps=reps, seed=seed)
        for contender in score_dict:
            aggregates[metric][contender] = [_interval(points[contender], cis[contender], i) for i in range(3)]

    ablations = [c for c in aggregated if c not in (target, reference, *baselines)]
    pairs = [(target, b) for b in baselines if target in aggregated and b in aggregated and b != target]
    pairs += [(c, reference) for c in aggregated if c not in (reference, target) and reference in aggregated]
    pairs += [(target, c) for c in ablations if target in aggregated]
    poi: dict[str, dict[tuple[str, str], Interval]] = {}
    for metric, score_dict in scores.items():
        # rliable's way: pairs "x,y" -> (scores_x, scores_y), each resampled independently
        pair_scores = {f"{x},{y}": (score_dict[x], score_dict[y]) for x, y in pairs}
        pair_points, pair_cis = interval_estimates(
            pair_scores, rly_metrics.probability_of_improvement, reps=reps, seed=seed
        )
        poi[metric] = {(x, y): _interval(pair_points[f"{x},{y}"], pair_cis[f"{x},{y}"]) for x, y in pairs}

    iqm_ratio = _iqm_ratios(scores["AUC"], [c for c in aggregated if c != reference], reference, reps, seed)
    ablation_ratio = _iqm_ratios(scores["AUC"], ablations, target, reps, seed)

    profiles = {}
    for metric, score_dict in scores.items():
        if not score_dict:
            continue
        all_scores = np.concatenate([s.reshape(-1) for s in score_dict.values()])
        tau = np.linspace(min(0.0, float(all_scores.min())), max(1.5, float(all_scores.max())), 61)
        profiles[metric] = (tau, *performance_profiles(score_dict, tau, reps=reps, seed=seed))

    wall = wallclock_ratios(data.records, reference)
    cpu = wallclock_ratios(data.records, reference, "train_cpu_seconds")
    wallclock = {
        c: {
            **{env: _ratio(wall[c][env]) for env in data.envs},
            "all": _ratio([v for e in data.envs for v in wall[c][e]]),
        }
        for c in data.contenders
        if c != reference
    }
    cpu_ratio = {c: _ratio([v for e in data.envs for v in cpu[c][e]]) for c in data.contenders if c != reference}
    return Statistics(
        aggregated=aggregated,
        scores=scores,
        aggregates=aggregates,
        poi=poi,
        iqm_ratio=iqm_ratio,
        ablations=ablations,
        ablation_ratio=ablation_ratio,
        profiles=profiles,
        wallclock=wallclock,
        cpu_ratio=cpu_ratio,
    )


def _iqm_ratios(
    auc_scores: Mapping[str, np.ndarray], numerators: Sequence[str], denominator: str, reps: int, seed: int
) -> dict[str, Interval]:
    """
    :param auc_scores: Contender -> AUC scores ``(n_seeds, n_envs)``.
    :param numerators: Contenders to divide.
    :param denominator: Contender divided by (none returned when it has no scores).
    :return: Contender -> IQM(AUC) / IQM(AUC of ``denominator``), the two resampled independently.
    """
    from rliable import metrics as rly_metrics

    if denominator not in auc_scores or not numerators:
        return {}

    def ratio_func(x: np.ndarray, y: np.ndarray) -> float:
        below = rly_metrics.aggregate_iqm(y)
        return float(rly_metrics.aggregate_iqm(x) / below) if below != 0 else float("nan")

    ratio_scores = {c: (auc_scores[c], auc_scores[denominator]) for c in numerators}
    points, cis = interval_estimates(ratio_scores, ratio_func, reps=reps, seed=seed)
    return {c: _interval(points[c], cis[c]) for c in ratio_scores}


# --------------------------------------------------------------------------- figures


def _colors(contenders: Sequence[str]) -> dict[str, Any]:
    import seaborn as sns

    palette = sns.color_palette("colorblind", n_colors=max(len(contenders), 1))
    return dict(zip(contenders, palette, strict=False))


def plot_learning_curves(data: ReportData, out_dir: Path, reps: int, seed: int) -> list[Path]:
    """
    One PNG per environment: mean eval return of each contender with a 95% stratified-bootstrap
    CI band over seeds, plus R_random and R_ref as dashed lines.

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


def _eval_episodes(data: ReportData) -> int:
    for record in data.records:
        return int(record.data.get("eval", {}).get("episodes", 0))
    return 0


def plot_aggregates(stats: Statistics, out_dir: Path) -> list[Path]:
    """Interval plots of IQM / mean / optimality gap, one PNG per metric (AUC, final)."""
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
    """P(X > Y) on normalised AUC with 95% CIs, for every tested pair."""
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
    """Score distributions (fraction of runs above tau) for AUC and final, with 95% CIs."""
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
    """IQM of the normalised score at each eval point (fraction of budget) across environments."""
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


# --------------------------------------------------------------------------- page


def _table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    def cell(value: Any) -> str:
        return str(value).replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(map(cell, header)) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(map(cell, row)) + " |" for row in rows]
    return "\n".join(lines)


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
) -> str:
    """
    :param full_seeds: Seeds per contender that the study calls complete; fewer get the "first look" banner.
    :return: The Markdown of ``README.md``.
    """
    lines: list[str] = []
    add = lines.append
    add("# Benchmark results")
    add("")
    add("Regenerate every table and figure of this page from the run files:")
    add("")
    add("```bash")
    add(command)
    add("```")
    add("")
    n_done = sum(r.status == "done" for r in data.records)
    n_failed = sum(r.status == "failed" for r in data.records)
    add(
        f"Generated from {len(data.records)} run files ({n_done} done, {n_failed} failed"
        + (f", plus {len(data.corrupt)} unreadable" if data.corrupt else "")
        + f"); stratified bootstrap 95% CIs with {reps} replications. Protocol: `docs/benchmarks/protocol.md`; "
        "the runs are produced by `python -m sb3_complementary.benchmark`."
    )
    add("")
    # The headline compares the target with its baselines: only their seeds make it a first look.
    headline = [c for c in stats.aggregated if c in (target, reference, *baselines)]
    min_seeds = min((len(data.complete_seeds[c]) for c in headline), default=0)
    if min_seeds < full_seeds:
        add(
            f"> **First look, not the study:** some contenders have fewer than {full_seeds} complete seeds "
            f"(fewest: {min_seeds}). Numbers will move as the matrix fills."
        )
        add("")
    filling = [c for c in stats.aggregated if c not in headline and len(data.complete_seeds[c]) < full_seeds]
    if filling:
        counts = ", ".join(f"`{c}` ({len(data.complete_seeds[c])})" for c in filling)
        add(
            f"> **Ablations still filling in** (complete seeds of {full_seeds} planned): {counts}. "
            "Their rows are a first look."
        )
        add("")

    # Headline
    add("## Headline")
    add("")
    add(
        "Normalised score `(R - R_random) / (R_ref - R_random)` per environment; **AUC** = mean over the "
        "eval points (sample efficiency), **final** = mean over the last 3 eval points. Aggregated over "
        "environments and the seeds done on every environment."
    )
    add("")
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
    add(
        _table(
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
    )
    add("")
    poi_rows = [
        [f"`{x}`", f"`{y}`", stats.poi["AUC"][(x, y)].fmt(), stats.poi["final"][(x, y)].fmt()]
        for (x, y) in stats.poi.get("AUC", {})
        if x in headline and y in headline
    ]
    if poi_rows:
        add("Probability of improvement P(X > Y) (rliable; per-environment Mann-Whitney, averaged):")
        add("")
        add(_table(["X", "Y", "P(X > Y) on AUC [95% CI]", "P(X > Y) on final [95% CI]"], poi_rows))
        add("")

    # Goal
    add(f"## Goal check: `{target}` against `{reference}` (docs/benchmarks/protocol.md)")
    add("")
    add(_goal_table(stats, target, baselines, reference))
    add("")

    if stats.ablations and target in stats.aggregated:
        add(f"## Ablations: each one changes one setting of `{target}`")
        add("")
        add(_ablation_table(data, stats, target, reference))
        add("")

    # Cost
    add("## Wall-clock cost")
    add("")
    add(
        f"Ratio of training wall-clock seconds to `{reference}` on the same environment and seed: median "
        "[min, max] (n pairs). Training seconds are the time inside `model.learn()` minus the evaluations "
        "(see `sb3_complementary/benchmark/run.py`). Only ratios are quoted: the machines are shared and noisy."
    )
    add("")
    cost_rows = [
        [
            f"`{c}`",
            *[stats.wallclock[c][env].fmt() for env in data.envs],
            stats.wallclock[c]["all"].fmt(),
            stats.cpu_ratio[c].fmt(),
        ]
        for c in data.contenders
        if c in stats.wallclock
    ]
    add(_table(["contender", *data.envs, "all environments", "CPU-time ratio, all"], cost_rows))
    add("")

    # Per env
    add("## Per environment")
    add("")
    add("Final eval return (mean of the last 3 eval points) per run, mean ± sample std over seeds (n seeds):")
    add("")
    env_rows = []
    for contender in data.contenders:
        cells = []
        for env in data.envs:
            runs = data.curves[contender][env]
            if runs:
                finals = np.array([final_score(curve) for curve in runs.values()])
                cells.append(f"{mean_pm_std(finals, 1)} ({len(finals)})")
            else:
                cells.append("-")
        env_rows.append([f"`{contender}`", *cells])
    add(_table(["contender", *data.envs], env_rows))
    add("")
    add("Normalised AUC per run, mean ± sample std over seeds (n seeds):")
    add("")
    auc_rows = []
    for contender in data.contenders:
        cells = []
        for env in data.envs:
            seeds = sorted(data.curves[contender][env])
            aucs = np.array([float(auc(data.normalized(contender, env, s))) for s in seeds])
            cells.append(f"{mean_pm_std(aucs, 3)} ({len(aucs)})" if seeds else "-")
        auc_rows.append([f"`{contender}`", *cells])
    add(_table(["contender", *data.envs], auc_rows))
    add("")
    add("Normalisation constants:")
    add("")
    add(
        _table(
            ["environment", "budget", "R_random", "R_ref", "R_ref source"],
            [
                [env, _budget(data, env), f"{data.r_random[env]:.3f}", f"{data.r_ref[env][0]:.3f}", data.r_ref[env][1]]
                for env in data.envs
            ],
        )
    )
    add("")
    add("R_random: mean return of a uniform-random policy, measured by the runner (`runs/random_scores.json`).")
    add("")
    ess_table = _ess_table(data)
    if ess_table:
        add("### How far from uniform the replay samples")
        add("")
        add(
            "ESS fraction of the sampling distribution, `1 / (N Σ p_i²)` over the stored transitions: 1 is "
            "uniform replay, 0.1 means the draws concentrate as if on a tenth of the buffer. Per run, the mean "
            "over its eval points; then the median over seeds (n runs that recorded it)."
        )
        add("")
        add(ess_table)
        add("")

    # Figures
    add("## Figures")
    add("")
    for path in figures:
        add(f"![{path.stem}]({_relative(path, out_dir)})")
        add("")

    # Completeness
    add("## Runs")
    add("")
    add("Seeds done (failed) per contender and environment:")
    add("")
    status: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    for record in data.records:
        status[(record.contender, record.env)][0 if record.status == "done" else 1] += 1
    add(
        _table(
            ["contender", *data.envs, "complete seeds"],
            [
                [
                    f"`{c}`",
                    *[
                        f"{status[(c, e)][0]}" + (f" ({status[(c, e)][1]} failed)" if status[(c, e)][1] else "")
                        for e in data.envs
                    ],
                    ",".join(map(str, data.complete_seeds[c])) or "none",
                ]
                for c in data.contenders
            ],
        )
    )
    add("")
    failed = [r for r in data.records if r.status == "failed"]
    add("### Failed runs")
    add("")
    if failed:
        add(
            _table(
                ["run file", "error"],
                [[f"`{r.path.name}`", r.error[:300]] for r in sorted(failed, key=lambda r: r.run_id)],
            )
        )
        add("")
        add("The full traceback is in each run file (`traceback`). Failed runs are not in the aggregates.")
    else:
        add("None.")
    add("")
    if data.corrupt:
        add("### Unreadable run files")
        add("")
        add("These files are half-written or corrupt; the runner redoes them:")
        add("")
        for path in data.corrupt:
            add(f"- `{path.name}`")
        add("")
    left_out = [
        r for r in data.records if r.status == "done" and r.seed not in data.complete_seeds.get(r.contender, [])
    ]
    if left_out:
        add("### Done runs left out of the aggregates")
        add("")
        add("Their seed is not done on every environment for that contender yet (they are in the learning curves):")
        add("")
        add(", ".join(f"`{r.run_id}`" for r in sorted(left_out, key=lambda r: r.run_id)))
        add("")
    add("### Code and library versions")
    add("")
    add(_versions_table(data))
    add("")
    return "\n".join(lines)


def _goal_table(stats: Statistics, target: str, baselines: Sequence[str], reference: str) -> str:
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


def _ablation_table(data: ReportData, stats: Statistics, target: str, reference: str) -> str:
    """:return: One row per ablation: its setting, IQM ratio to the target and P(target > ablation)."""
    rows = []
    for ablation in stats.ablations:
        kwargs = next(r.data["contender"].get("kwargs", {}) for r in data.records if r.contender == ablation)
        setting = ", ".join(f"`{k}={v!r}`" for k, v in sorted(kwargs.items())) or "(none)"
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


def _verdict(ok: bool) -> str:
    return "**yes**" if ok else "**no**"


def _budget(data: ReportData, env: str) -> int:
    return next(r.budget for r in data.records if r.env == env)


def _relative(path: Path, base: Path) -> str:
    try:
        return str(path.resolve().relative_to(base.resolve()))
    except ValueError:
        return str(path)


def _versions_table(data: ReportData) -> str:
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


# --------------------------------------------------------------------------- entry point


def build_report(
    runs_dir: str | Path,
    out_dir: str | Path,
    reps: int = 2000,
    seed: int = 0,
    target: str = "complementary",
    baselines: Sequence[str] = ("dqn", "per"),
    reference: str = "dqn",
    command: str | None = None,
    full_seeds: int = FULL_SEEDS,
) -> Path:
    """
    Write ``README.md`` and the PNGs.

    :param runs_dir: Folder of the run files.
    :param out_dir: Folder of the page and figures.
    :param reps: Bootstrap replications.
    :param seed: Bootstrap seed.
    :param target: Contender tested for improvement.
    :param baselines: Contenders it is compared with.
    :param reference: Contender of the ratios (IQM and wall clock).
    :param command: Command line printed at the top of the page (default: rebuilt from the arguments).
    :param full_seeds: Complete seeds the study plans per contender (10 in docs/benchmarks/protocol.md;
        issue #4's SAC study: 5).
    :return: Path of ``README.md``.
    :raises BudgetMismatchError: if runs of an environment have different budgets.
    """
    runs_dir = Path(runs_dir)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    data = collect(runs_dir)
    stats = compute_statistics(data, reps=reps, seed=seed, target=target, baselines=baselines, reference=reference)
    figures: list[Path] = []
    figures += plot_aggregates(stats, out_dir)
    figures += plot_probability_of_improvement(stats, out_dir)
    figures += plot_performance_profiles(stats, out_dir)
    figures += plot_aggregate_curve(data, stats, out_dir, reps, seed)
    figures += plot_learning_curves(data, out_dir, reps, seed)
    if command is None:
        command = (
            "python -m sb3_complementary.benchmark.report "
            f"--runs {shlex.quote(str(runs_dir))} --out {shlex.quote(str(out_dir))}"
        )
        if reps != 2000:
            command += f" --reps {reps}"
        if full_seeds != FULL_SEEDS:
            command += f" --full-seeds {full_seeds}"
    page = render_page(data, stats, figures, out_dir, command, reps, target, baselines, reference, full_seeds)
    readme = out_dir / "README.md"
    readme.write_text(page)
    return readme


def main(argv: Sequence[str] | None = None) -> int:
    """
    Entry point of ``python -m sb3_complementary.benchmark.report``.

    :return: 0 on success, 2 on bad input (no runs, mismatched budgets, unreadable files).
    """
    parser = argparse.ArgumentParser(
        prog="python -m sb3_complementary.benchmark.report", description="Statistics and plots of the benchmark runs."
    )
    parser.add_argument("--runs", type=Path, default=Path("docs/benchmarks/runs"), help="folder of run files")
    parser.add_argument("--out", type=Path, default=Path("docs/benchmarks"), help="folder of README.md and PNGs")
    parser.add_argument("--reps", type=int, default=2000, help="bootstrap replications (default 2000)")
    parser.add_argument("--bootstrap-seed", type=int, default=0, help="seed of the bootstrap")
    parser.add_argument("--target", default="complementary", help="contender tested for improvement")
    parser.add_argument("--baselines", default="dqn,per", help="contenders it is compared with")
    parser.add_argument("--reference", default="dqn", help="contender of the IQM and wall-clock ratios")
    parser.add_argument(
        "--full-seeds",
        type=int,
        default=FULL_SEEDS,
        help=f"seeds per contender the study plans (default {FULL_SEEDS}); fewer is labelled a first look",
    )
    args = parser.parse_args(argv)
    command = " ".join(
        ["python -m sb3_complementary.benchmark.report"]
        + [shlex.quote(a) for a in (sys.argv[1:] if argv is None else argv)]
    )
    if "--runs" not in command:
        command += f" --runs {shlex.quote(str(args.runs))}"
    if "--out" not in command:
        command += f" --out {shlex.quote(str(args.out))}"
    try:
        readme = build_report(
            args.runs,
            args.out,
            reps=args.reps,
            seed=args.bootstrap_seed,
            target=args.target,
            baselines=[b for b in args.baselines.split(",") if b],
            reference=args.reference,
            command=command,
            full_seeds=args.full_seeds,
        )
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {readme}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
