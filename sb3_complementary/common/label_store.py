"""A FIFO store of (features, contribution label) pairs that the extractor is fitted on."""

import numpy as np

from sb3_complementary.common.tasks import rank_within_tasks


class LabelStore:
    """
    Ring buffer of labelled transitions.

    Features are stored *as they were when the label was measured*, so the extractor learns
    the map "what a transition looked like → whether replaying it helped". Labels age out
    (FIFO), because contributions are non-stationary: what helped a novice may mislead an
    expert (docs/design.md, "Pitfalls and their guards").

    With ``task_column`` set (``task_balanced_labels=True``), :meth:`sample` returns each label's
    percentile rank among the stored labels of the same task (the task id is that feature
    column), so every task's targets have mean 0.5 and no task can monopolise the replay
    (:func:`~sb3_complementary.common.tasks.rank_within_tasks`). The ranks are taken over the
    whole store, recomputed once after new labels arrive; the stored labels stay raw.

    :param capacity: Number of labels kept.
    :param n_features: Feature width.
    :param task_column: Feature column holding the task id, to balance labels per task; None: raw labels.
    """

    def __init__(self, capacity: int, n_features: int, task_column: int | None = None) -> None:
        self.capacity = capacity
        self.features = np.zeros((capacity, n_features), dtype=np.float32)
        self.labels = np.zeros(capacity, dtype=np.float32)
        self.pos = 0
        self.full = False
        self.task_column = task_column
        self._balanced: np.ndarray | None = None  # per-task ranks of self.labels[: len(self)], None when stale

    def __len__(self) -> int:
        return self.capacity if self.full else self.pos

    def add(self, features: np.ndarray, labels: np.ndarray) -> None:
        """
        Append a batch of labels, overwriting the oldest when full.

        :param features: ``(n, n_features)``.
        :param labels: ``(n,)`` targets in [0, 1].
        """
        n = len(labels)
        if n == 0:
            return
        if n >= self.capacity:
            features, labels, n = features[-self.capacity :], labels[-self.capacity :], self.capacity
        rows = (self.pos + np.arange(n)) % self.capacity
        self.features[rows] = features
        self.labels[rows] = labels
        self.full = self.full or self.pos + n >= self.capacity
        self.pos = (self.pos + n) % self.capacity
        self._balanced = None

    def sample(self, batch_size: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """Uniform minibatch ``(features (b, n_features), targets (b,))``; targets balanced per task if asked."""
        rows = rng.integers(0, len(self), size=batch_size)
        return self.features[rows], self.targets()[rows]

    def targets(self) -> np.ndarray:
        """``(len(self),)`` fitting targets: the labels, or their per-task ranks when ``task_column`` is set."""
        if self.task_column is None:
            return self.labels[: len(self)]
        if self._balanced is None:
            n = len(self)
            self._balanced = rank_within_tasks(self.labels[:n], self.features[:n, self.task_column])
        return self._balanced

    def positive_share(self) -> float:
        """Mean label: the share of positive labels for binary signals."""
        return float(self.labels[: len(self)].mean()) if len(self) else float("nan")
