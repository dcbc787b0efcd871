"""What a weighted buffer's draws look like, as queries: ESS, replay weights, task shares, memory."""

from typing import TYPE_CHECKING

import numpy as np

from sb3_complementary.common.sum_tree import SumTree

if TYPE_CHECKING:
    from stable_baselines3.common.buffers import ReplayBuffer

    _Base = ReplayBuffer
else:
    _Base = object


class ReplayDiagnosticsMixin(_Base):
    """
    Diagnostics of :class:`~sb3_complementary.common.replay_buffer.ComplementaryReplayBuffer`,
    read from the sum tree's distribution (``sampling_probabilities``). None of them writes.
    """

    tree: SumTree
    scores: np.ndarray
    task_ids: np.ndarray
    terminals: np.ndarray
    uniform_fraction: float

    if TYPE_CHECKING:

        def valid_indices(self) -> np.ndarray: ...
        def n_valid(self) -> int: ...
        def sampling_probabilities(self, indices: np.ndarray, uniform_share: float) -> np.ndarray: ...

    def ess_fraction(self, indices: np.ndarray | None = None) -> float:
        """
        Effective sample size of the sampling distribution, as a fraction of the transitions:
        ``1 / (N * sum(p_i^2))``; 1 for uniform replay, near 0 when a few transitions take all draws.

        :param indices: ``(N,)`` flat indices (default: every valid transition).
        :return: The fraction; 1 for an empty buffer (nothing is prioritised yet).
        """
        indices = self.valid_indices() if indices is None else indices
        if len(indices) == 0:
            return 1.0
        probabilities = self.sampling_probabilities(indices, self.uniform_fraction)
        probabilities = probabilities / probabilities.sum()
        return float(1.0 / np.sum(probabilities**2) / len(indices))

    def replay_weights(self, indices: np.ndarray | None = None) -> np.ndarray:
        """
        ``(n,)`` ``N * P(i)`` under the uniform/score mixture: how many times as much as under
        uniform replay each transition counts (mean 1 over the buffer; 1 everywhere for uniform replay).

        :param indices: Flat indices (default: every valid transition).
        """
        indices = self.valid_indices() if indices is None else indices
        return self.n_valid() * self.sampling_probabilities(indices, self.uniform_fraction)

    def task_shares(self, indices: np.ndarray | None = None) -> dict[int, tuple[float, float]]:
        """
        Per task (``info["task_id"]`` at insertion), the share of replay draws under the
        uniform/score mixture and the share of the stored data. A task whose sampling share is far
        above its data share is favoured by the replay; one near 1 monopolises it.

        :param indices: ``(n,)`` flat indices to compare (default: every valid transition).
        :return: ``{task_id: (sample_share, data_share)}``, task ids ascending; one entry in a
            single-task run, none for an empty buffer.
        """
        indices = self.valid_indices() if indices is None else indices
        task_ids = self.task_ids.reshape(-1)[indices]
        probabilities = self.sampling_probabilities(indices, self.uniform_fraction)
        total = probabilities.sum()
        if len(task_ids) == 0 or total <= 0:
            return {}
        if task_ids.min() == task_ids.max():  # single task: skip the sort of the whole buffer
            return {int(task_ids[0]): (1.0, 1.0)}
        tasks, inverse = np.unique(task_ids, return_inverse=True)
        sample = np.bincount(inverse, weights=probabilities, minlength=len(tasks)) / total
        data = np.bincount(inverse, minlength=len(tasks)) / len(task_ids)
        return {int(t): (float(s), float(d)) for t, s, d in zip(tasks, sample, data, strict=True)}

    def overhead_bytes(self) -> int:
        """Bytes held beyond SB3's own storage: the sum tree, the scores, the terminal flags and the task ids."""
        return int(self.tree.nbytes + self.scores.nbytes + self.terminals.nbytes + self.task_ids.nbytes)
