"""
Per-run summary metrics of a normalised learning curve (see docs/benchmarks/protocol.md, "Metrics").

- **AUC** (sample efficiency): the mean normalised score over all eval points. With eval
  points evenly spaced over the budget this is the area under the curve divided by the
  budget (right Riemann sum), so it rewards learning early, not only ending high.
- **Final**: the mean normalised score over the last 3 eval points (less noisy than the last
  one alone).

Both accept a single curve of shape ``(n_evals,)`` or a stack of curves ``(..., n_evals)``
and reduce the last axis. Aggregation across runs and environments (IQM, CIs) is the report's
job, through rliable.
"""

from __future__ import annotations

import numpy as np

#: Number of trailing eval points averaged by :func:`final_score`.
FINAL_POINTS = 3


def auc(normalized_curve: np.ndarray) -> np.ndarray:
    """
    :param normalized_curve: Normalised scores at the eval points, shape ``(..., n_evals)``.
    :return: Mean over the eval points, shape ``(...)`` (a 0-d array for one curve).
    :raises ValueError: on an empty curve.
    """
    curve = np.asarray(normalized_curve, dtype=np.float64)
    if curve.ndim == 0 or curve.shape[-1] == 0:
        raise ValueError("AUC of an empty curve")
    return np.asarray(curve.mean(axis=-1))


def final_score(normalized_curve: np.ndarray, last: int = FINAL_POINTS) -> np.ndarray:
    """
    :param normalized_curve: Normalised scores at the eval points, shape ``(..., n_evals)``.
    :param last: Number of trailing eval points averaged.
    :return: Mean over the last ``last`` eval points, shape ``(...)``.
    :raises ValueError: if the curve has fewer than ``last`` points.
    """
    curve = np.asarray(normalized_curve, dtype=np.float64)
    if curve.ndim == 0 or curve.shape[-1] < last or last < 1:
        raise ValueError(f"final score needs at least {last} eval points, got shape {curve.shape}")
    return np.asarray(curve[..., -last:].mean(axis=-1))


def mean_pm_std(values: np.ndarray | list[float], digits: int) -> str:
    """
    ``"mean ± std"`` over seeds, the std being the sample one (``ddof=1``): the seeds are a sample
    of the runs the code could produce, and the population formula understates their spread.
    A single value has no spread to show: ``"mean"`` alone.

    :param values: One value per seed.
    :param digits: Decimals.
    """
    array = np.asarray(values, dtype=np.float64)
    if len(array) < 2:
        return f"{array.mean():.{digits}f}"
    return f"{array.mean():.{digits}f} ± {array.std(ddof=1):.{digits}f}"
