"""A FIFO store of (features, contribution label) pairs that the extractor is fitted on."""

import numpy as np


class LabelStore:
    """
    Ring buffer of labelled transitions.

    Features are stored *as they were when the label was measured*, so the extractor learns
    the map "what a transition looked like → whether replaying it helped". Labels age out
    (FIFO), because contributions are non-stationary: what helped a novice may mislead an
    expert (DESIGN §7).

    :param capacity: Number of labels kept.
    :param n_features: Feature width.
    """

    def __init__(self, capacity: int, n_features: int) -> None:
        self.capacity = capacity
        self.features = np.zeros((capacity, n_features), dtype=np.float32)
        self.labels = np.zeros(capacity, dtype=np.float32)
        self.pos = 0
        self.full = False

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

    def sample(self, batch_size: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """Uniform minibatch ``(features (b, n_features), labels (b,))``."""
        rows = rng.integers(0, len(self), size=batch_size)
        return self.features[rows], self.labels[rows]

    def positive_share(self) -> float:
        """Mean label: the share of positive labels for binary signals."""
        return float(self.labels[: len(self)].mean()) if len(self) else float("nan")
