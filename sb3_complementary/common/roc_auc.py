"""
ROC AUC from rank statistics, in NumPy alone (the density-ratio classifier's held-out evidence).

The area under the ROC curve equals the Mann–Whitney U statistic of the positive scores against
the negative ones, divided by ``n_pos * n_neg``: the probability that a random positive scores
above a random negative, a tie counting one half. Tied scores share their average rank, which
gives exactly that half (and the same value as ``sklearn.metrics.roc_auc_score``).
"""

import numpy as np


def average_ranks(values: np.ndarray) -> np.ndarray:
    """
    1-based ranks of ``values``, tied values sharing the mean of the ranks they span.

    :param values: ``(n,)`` finite numbers.
    :return: ``(n,)`` float64 ranks; they sum to ``n * (n + 1) / 2``.
    """
    values = np.asarray(values).reshape(-1)
    _, inverse, counts = np.unique(values, return_inverse=True, return_counts=True)
    # Distinct value k (in sorted order) spans ranks ends[k] - counts[k] + 1 .. ends[k].
    ends = np.cumsum(counts)
    mean_rank = ends - (counts - 1) / 2.0
    return mean_rank[inverse.reshape(-1)].astype(np.float64)


def roc_auc(labels: np.ndarray, scores: np.ndarray) -> float:
    """
    Area under the ROC curve of ``scores`` for the binary ``labels``.

    :param labels: ``(n,)`` binary labels; non-zero (or True) is the positive class.
    :param scores: ``(n,)`` finite scores, larger meaning "more likely positive".
    :return: The AUC in ``[0, 1]``: 1 when every positive scores above every negative, 0.5 for
        scores that cannot tell the classes apart, NaN when one class is empty.
    :raises ValueError: If the shapes differ or a score is not finite.
    """
    labels = np.asarray(labels).reshape(-1)
    scores = np.asarray(scores, dtype=np.float64).reshape(-1)
    if labels.shape != scores.shape:
        raise ValueError(f"labels and scores must have the same length, got {labels.size} and {scores.size}")
    if not np.all(np.isfinite(scores)):
        raise ValueError("roc_auc needs finite scores")
    positive = labels.astype(bool)
    n_pos = int(positive.sum())
    n_neg = positive.size - n_pos
    if n_pos == 0 or n_neg == 0:
        return float("nan")
    rank_sum = float(average_ranks(scores)[positive].sum())
    u_statistic = rank_sum - n_pos * (n_pos + 1) / 2.0
    return u_statistic / (n_pos * n_neg)
