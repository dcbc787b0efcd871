"""
The statistics of the report: rliable's aggregates, probabilities of improvement, IQM ratios and
performance profiles over the normalised scores, and the wall-clock and CPU-time ratios.

Every rliable call that resamples goes through :func:`interval_estimates` or
:func:`performance_profiles`, which seed NumPy's global generator per key: the page is reproducible
and a contender's CI does not depend on which other contenders are on it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

from benchmarks.harness.metrics import auc, final_score
from benchmarks.harness.report.collect import ReportData
from benchmarks.harness.store import RunRecord

#: The aggregates of :attr:`Statistics.aggregates`, in this order.
METRIC_NAMES = ("IQM", "Mean", "Optimality Gap")


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

    return _seeded_per_key(score_dict, lambda one: library.get_interval_estimates(one, func, reps=reps), seed)


def to_interval(point: Any, ci: np.ndarray, index: int | None = None) -> Interval:
    """
    One estimate of an :func:`interval_estimates` output as an :class:`Interval`.

    :param point: The point estimate(s), a scalar or shape ``(n,)``.
    :param ci: Its CI, shape ``(2,)`` or ``(2, n)`` (lower row, upper row).
    :param index: Which of the ``n`` estimates (the first when ``None``).
    :return: The estimate with its CI.
    """
    point_arr = np.asarray(point, dtype=np.float64).reshape(-1)
    ci_arr = np.asarray(ci, dtype=np.float64).reshape(2, -1)
    i = 0 if index is None else index
    return Interval(float(point_arr[i]), float(ci_arr[0, i]), float(ci_arr[1, i]))


def summarize_ratios(values: Sequence[float]) -> Ratio:
    """
    :param values: Per-seed ratios (possibly none).
    :return: Their count, median, min and max (NaN with ``n=0`` when there is none).
    """
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

    return _seeded_per_key(score_dict, lambda one: library.create_performance_profile(one, tau, reps=reps), seed)


def _seeded_per_key(
    score_dict: Mapping[str, Any], call: Callable[[dict[str, Any]], tuple[Any, Any]], seed: int
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """
    An rliable call that returns two dicts, made once per key on a one-key dict with NumPy's global
    generator seeded, so a key's estimate does not depend on which other keys are in the report.
    """
    firsts: dict[str, np.ndarray] = {}
    seconds: dict[str, np.ndarray] = {}
    for key, scores in score_dict.items():
        with _seeded_global_rng(seed):
            first, second = call({key: scores})
        firsts[key], seconds[key] = first[key], second[key]
    return firsts, seconds


def iqm_ratios(
    auc_scores: Mapping[str, np.ndarray], numerators: Sequence[str], denominator: str, reps: int, seed: int
) -> dict[str, Interval]:
    """
    IQM ratios with stratified-bootstrap CIs, through :func:`interval_estimates`.

    :param auc_scores: Contender -> AUC scores ``(n_seeds, n_envs)``.
    :param numerators: Contenders to divide.
    :param denominator: Contender divided by (none returned when it has no scores).
    :param reps: Bootstrap replications.
    :param seed: Seed of NumPy's global generator before each call.
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
    return {c: to_interval(points[c], cis[c]) for c in ratio_scores}


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
            aggregates[metric][contender] = [to_interval(points[contender], cis[contender], i) for i in range(3)]

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
        poi[metric] = {(x, y): to_interval(pair_points[f"{x},{y}"], pair_cis[f"{x},{y}"]) for x, y in pairs}

    iqm_ratio = iqm_ratios(scores["AUC"], [c for c in aggregated if c != reference], reference, reps, seed)
    ablation_ratio = iqm_ratios(scores["AUC"], ablations, target, reps, seed)

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
            **{env: summarize_ratios(wall[c][env]) for env in data.envs},
            "all": summarize_ratios([v for e in data.envs for v in wall[c][e]]),
        }
        for c in data.contenders
        if c != reference
    }
    cpu_ratio = {
        c: summarize_ratios([v for e in data.envs for v in cpu[c][e]]) for c in data.contenders if c != reference
    }
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
