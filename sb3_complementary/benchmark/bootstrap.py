"""
Stratified bootstrap confidence intervals, as in rliable (Agarwal et al., 2021).

This is rliable's ``library.get_interval_estimates`` (``StratifiedBootstrap`` and
``StratifiedIndependentBootstrap``, percentile method) re-implemented with numpy, because
``rliable.library`` imports ``arch.bootstrap`` and that import is broken in the supported
environment: rliable 1.2 requires ``arch<8``, and ``arch`` 7.x fails to import with
``pandas>=3`` (``deprecate_kwarg`` changed signature), while ``arch`` 8 drops the
``random_state`` keyword rliable passes. rliable's stratified resampling also draws from
numpy's *global* generator, so its CIs change from one call to the next; here every
estimate uses its own seeded ``numpy.random.Generator`` and the committed report is
reproducible bit for bit. The aggregate metrics themselves (IQM, mean, optimality gap,
probability of improvement) are rliable's (``rliable.metrics``).

Stratified: the runs are resampled with replacement *within* each task (environment), so
every bootstrap sample keeps the same number of runs per task; tasks are never resampled.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

#: Coverage of every interval.
CONFIDENCE = 0.95


def _percentile_interval(samples: np.ndarray, size: float) -> np.ndarray:
    tail = (1.0 - size) / 2.0 * 100.0
    return np.percentile(samples, [tail, 100.0 - tail], axis=0)


def _resample(scores: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One stratified resample of ``scores`` with shape ``(runs, tasks, ...)``."""
    n_runs, n_tasks = scores.shape[0], scores.shape[1]
    run_index = rng.integers(0, n_runs, size=(n_runs, n_tasks))
    return scores[run_index, np.arange(n_tasks)[None, :]]


def stratified_interval(
    scores: np.ndarray,
    func: Callable[[np.ndarray], Any],
    reps: int,
    seed: int = 0,
    size: float = CONFIDENCE,
) -> tuple[np.ndarray, np.ndarray]:
    """
    Point estimate and percentile CI of ``func(scores)`` under stratified resampling of runs.

    :param scores: Scores of one method, shape ``(n_runs, n_tasks, ...)``.
    :param func: Aggregate, e.g. ``rliable.metrics.aggregate_iqm``; returns a scalar or 1D array.
    :param reps: Bootstrap replications.
    :param seed: Seed of this estimate's generator.
    :param size: Coverage of the interval.
    :return: ``(point, interval)``: ``point`` of shape ``(k,)`` and ``interval`` of shape
        ``(2, k)`` (lower row, upper row), ``k`` being the size of ``func``'s output.
    """
    scores = np.asarray(scores, dtype=np.float64)
    if scores.ndim < 2 or scores.shape[0] == 0:
        raise ValueError(f"scores must have shape (n_runs >= 1, n_tasks, ...), got {scores.shape}")
    rng = np.random.default_rng(seed)
    point = np.atleast_1d(np.asarray(func(scores), dtype=np.float64))
    samples = np.stack([np.atleast_1d(np.asarray(func(_resample(scores, rng)), dtype=np.float64)) for _ in range(reps)])
    return point, _percentile_interval(samples, size)


def independent_interval(
    scores: Sequence[np.ndarray],
    func: Callable[..., Any],
    reps: int,
    seed: int = 0,
    size: float = CONFIDENCE,
) -> tuple[np.ndarray, np.ndarray]:
    """
    Like :func:`stratified_interval` for a function of several methods' scores (e.g. the
    probability of improvement of X over Y): each array is resampled independently, each
    stratified by task. The arrays may have different numbers of runs.

    :param scores: Arrays of shape ``(n_runs_i, n_tasks, ...)``.
    :param func: Called as ``func(*resampled)``.
    :param reps: Bootstrap replications.
    :param seed: Seed of this estimate's generator.
    :param size: Coverage of the interval.
    :return: ``(point, interval)`` as in :func:`stratified_interval`.
    """
    arrays = [np.asarray(s, dtype=np.float64) for s in scores]
    rng = np.random.default_rng(seed)
    point = np.atleast_1d(np.asarray(func(*arrays), dtype=np.float64))
    samples = np.stack(
        [np.atleast_1d(np.asarray(func(*[_resample(a, rng) for a in arrays]), dtype=np.float64)) for _ in range(reps)]
    )
    return point, _percentile_interval(samples, size)


def interval_estimates(
    score_dict: Mapping[str, np.ndarray],
    func: Callable[[np.ndarray], Any],
    reps: int,
    seed: int = 0,
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """
    :func:`stratified_interval` for every method, with the layout of rliable's
    ``get_interval_estimates`` (so the results feed ``rliable.plot_utils`` directly).

    :param score_dict: Method name -> scores ``(n_runs, n_tasks, ...)``.
    :param func: Aggregate function.
    :param reps: Bootstrap replications.
    :param seed: Seed (each method gets its own generator seeded with it).
    :return: ``(points, intervals)``: name -> ``(k,)`` and name -> ``(2, k)``.
    """
    points: dict[str, np.ndarray] = {}
    intervals: dict[str, np.ndarray] = {}
    for name, scores in score_dict.items():
        points[name], intervals[name] = stratified_interval(scores, func, reps, seed)
    return points, intervals
