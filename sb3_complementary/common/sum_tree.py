"""A vectorised sum tree: O(log N) batched sampling proportional to non-negative priorities."""

import numpy as np


class SumTree:
    """
    Binary sum tree over ``capacity`` leaves, stored in one flat ``float64`` array.

    Every operation is batched: updates and samples take index/value arrays and walk the
    tree level by level with NumPy, so the cost of a batch of 256 is ~``log2(capacity)``
    vector operations instead of 256 Python loops. ``float64`` keeps the root equal to the
    sum of the leaves to ~1e-12 relative error even after millions of updates; a full
    :meth:`set_all` rebuilds it exactly.

    Layout: node ``1`` is the root, node ``k`` has children ``2k`` and ``2k + 1``, and leaf
    ``i`` lives at node ``n_leaves + i`` where ``n_leaves`` is ``capacity`` rounded up to a
    power of two (the padding leaves hold zero).

    :param capacity: Number of leaves (one per stored transition).
    """

    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError(f"SumTree capacity must be >= 1, got {capacity}")
        self.capacity = capacity
        self.n_leaves = 1 << max(int(np.ceil(np.log2(capacity))), 0)
        self.depth = int(np.log2(self.n_leaves))
        self.nodes = np.zeros(2 * self.n_leaves, dtype=np.float64)

    @property
    def total(self) -> float:
        """Sum of all priorities (the root)."""
        return float(self.nodes[1])

    @property
    def leaves(self) -> np.ndarray:
        """View of the ``(capacity,)`` leaf priorities. Read-only by convention: write with :meth:`update`."""
        return self.nodes[self.n_leaves : self.n_leaves + self.capacity]

    def update(self, indices: np.ndarray, priorities: np.ndarray) -> None:
        """
        Set the priorities of some leaves and re-sum their ancestors.

        :param indices: ``(n,)`` leaf indices in ``[0, capacity)``; duplicates keep the last value.
        :param priorities: ``(n,)`` non-negative finite priorities.
        """
        indices = np.asarray(indices, dtype=np.int64).reshape(-1)
        priorities = np.asarray(priorities, dtype=np.float64).reshape(-1)
        if indices.size == 0:
            return
        if not (np.all(np.isfinite(priorities)) and np.all(priorities >= 0)):
            raise ValueError("SumTree priorities must be finite and >= 0")
        nodes = indices + self.n_leaves
        self.nodes[nodes] = priorities
        for _ in range(self.depth):
            nodes = np.unique(nodes >> 1)
            self.nodes[nodes] = self.nodes[2 * nodes] + self.nodes[2 * nodes + 1]

    def set_all(self, priorities: np.ndarray) -> None:
        """
        Replace every leaf and rebuild the whole tree bottom-up in ``O(capacity)``.

        This is the path for a full re-score: one reshape-and-sum per level, and it also
        removes any floating-point drift accumulated by incremental updates.

        :param priorities: ``(capacity,)`` non-negative finite priorities.
        """
        priorities = np.asarray(priorities, dtype=np.float64).reshape(-1)
        if priorities.shape != (self.capacity,):
            raise ValueError(f"Expected {self.capacity} priorities, got shape {priorities.shape}")
        if not (np.all(np.isfinite(priorities)) and np.all(priorities >= 0)):
            raise ValueError("SumTree priorities must be finite and >= 0")
        self.nodes[self.n_leaves : self.n_leaves + self.capacity] = priorities
        self.nodes[self.n_leaves + self.capacity :] = 0.0
        start = self.n_leaves
        while start > 1:
            level = self.nodes[start : 2 * start]
            self.nodes[start // 2 : start] = level[0::2] + level[1::2]
            start //= 2

    def find(self, values: np.ndarray) -> np.ndarray:
        """
        Leaf indices whose cumulative-priority interval contains each value.

        :param values: ``(n,)`` values in ``[0, total)``.
        :return: ``(n,)`` leaf indices; a leaf with zero priority is never returned
            while the tree holds a positive total.
        """
        values = np.asarray(values, dtype=np.float64).copy()
        nodes = np.ones(values.shape, dtype=np.int64)
        for _ in range(self.depth):
            left = 2 * nodes
            left_sum = self.nodes[left]
            go_right = values >= left_sum
            # Float round-off can push a value past a zero-priority right child: stay left then.
            go_right &= self.nodes[left + 1] > 0
            values = np.where(go_right, values - left_sum, values)
            nodes = np.where(go_right, left + 1, left)
        return np.minimum(nodes - self.n_leaves, self.capacity - 1)

    def sample_stratified(self, offsets: np.ndarray) -> np.ndarray:
        """
        Draw one leaf per equal-mass stratum, proportionally to priority.

        Stratification (Schaul et al., 2016) lowers the variance of the batch composition
        compared with i.i.d. draws while keeping each slot's marginal probability ``p_i / total``
        (for a uniformly random slot). Taking the offsets instead of a generator lets callers use
        NumPy's global RNG, which SB3's ``set_random_seed`` seeds.

        :param offsets: ``(batch_size,)`` uniform draws in ``[0, 1)``, one per stratum.
        :return: ``(batch_size,)`` leaf indices.
        """
        total = self.total
        if total <= 0:
            raise ValueError("Cannot sample from a SumTree whose priorities are all zero")
        batch_size = len(offsets)
        bounds = np.arange(batch_size, dtype=np.float64) + np.asarray(offsets, dtype=np.float64)
        return self.find(bounds * (total / max(batch_size, 1)))
