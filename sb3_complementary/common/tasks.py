"""
Per-task views of the replay in multi-task runs: who holds the data, who gets replayed, and
contribution labels balanced within each task.

The task of a transition is its ``task_id`` feature column (``info["task_id"]`` at insertion,
see :mod:`sb3_complementary.common.features`); single-task envs leave it at 0.
"""

import numpy as np

from sb3_complementary.common.features import SCALAR_FEATURES

#: Column of the task id in the extractor's feature matrix (and in the label store's features).
TASK_FEATURE_COLUMN = SCALAR_FEATURES.index("task_id")


def task_shares(task_ids: np.ndarray, probabilities: np.ndarray) -> dict[int, tuple[float, float]]:
    """
    Share of the replay's draws and share of the stored data, per task.

    A task whose sampling share is far above its data share is being favoured by the replay;
    when one task's sampling share approaches 1, it monopolises the replay.

    :param task_ids: ``(n,)`` task id of each stored transition.
    :param probabilities: ``(n,)`` probability that one batch slot draws each transition (any
        positive scale: normalised here).
    :return: ``{task_id: (sample_share, data_share)}``, task ids ascending.
    """
    task_ids = np.asarray(task_ids).reshape(-1)
    probabilities = np.asarray(probabilities, dtype=np.float64).reshape(-1)
    total = probabilities.sum()
    if len(task_ids) == 0 or total <= 0:
        return {}
    if task_ids.min() == task_ids.max():  # single task: skip the sort of the whole buffer
        return {int(task_ids[0]): (1.0, 1.0)}
    tasks, inverse = np.unique(task_ids, return_inverse=True)
    sample = np.bincount(inverse, weights=probabilities, minlength=len(tasks)) / total
    data = np.bincount(inverse, minlength=len(tasks)) / len(task_ids)
    return {int(t): (float(s), float(d)) for t, s, d in zip(tasks, sample, data, strict=True)}


def rank_within_tasks(labels: np.ndarray, task_ids: np.ndarray) -> np.ndarray:
    """
    Replace each label by its percentile rank among the labels of the same task.

    The multi-task analogue of the paper's group-wise normalisation of advantages: within each
    task, a transition's target says how it compares with that task's other transitions, so
    every task's targets have mean 0.5 and an easy task whose transitions all score well cannot
    take over the replay. Ties share their mid-rank (binary labels with positive share ``p`` in a
    task become ``(1 - p) / 2`` and ``1 - p / 2``); a task with one label gets 0.5.

    :param labels: ``(n,)`` contribution labels (binary or in [0, 1]).
    :param task_ids: ``(n,)`` task id of each label.
    :return: ``(n,)`` float32 targets in [0, 1], mean 0.5 within every task.
    """
    labels = np.asarray(labels, dtype=np.float64).reshape(-1)
    task_ids = np.asarray(task_ids).reshape(-1)
    out = np.empty(len(labels), dtype=np.float32)
    for task in np.unique(task_ids):
        members = np.flatnonzero(task_ids == task)
        out[members] = _mid_rank_percentile(labels[members])
    return out


def _mid_rank_percentile(values: np.ndarray) -> np.ndarray:
    """``(n,)`` values → ``(n,)`` mid-ranks scaled to [0, 1] (0.5 for n = 1)."""
    n = len(values)
    if n == 1:
        return np.full(1, 0.5)
    order = np.argsort(values, kind="stable")
    sorted_values = values[order]
    # Each run of equal values gets the mean of the ranks it spans.
    starts = np.flatnonzero(np.r_[True, sorted_values[1:] != sorted_values[:-1]])
    ends = np.r_[starts[1:], n]
    mid = (starts + ends - 1) / 2.0
    ranks = np.empty(n)
    ranks[order] = np.repeat(mid, ends - starts)
    return ranks / (n - 1)
