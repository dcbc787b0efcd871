"""
The draw from the sum tree by the stored scores, and the tree's upkeep.

Used by PER (``PrioritizedDQN`` and its siblings) and by the Complementary algorithms with
``candidate_pool=0``; the default Complementary draw selects from a candidate pool instead
(``select_from_candidates`` of the buffer) and never reads the tree. A mixin of
:class:`~sb3_complementary.common.replay_buffer.ComplementaryReplayBuffer`, which holds the
scores, the tree and the priority map it reads.
"""

from typing import TYPE_CHECKING, Any

import numpy as np
from stable_baselines3.common.vec_env import VecNormalize

from sb3_complementary.common.samples import WeightedSamples
from sb3_complementary.common.sum_tree import SumTree

if TYPE_CHECKING:
    from stable_baselines3.common.buffers import ReplayBuffer

    _Base = ReplayBuffer
else:
    _Base = object


class TreeDrawMixin(_Base):
    """
    The sum-tree side of the weighted buffer: new rows enter the tree in one batched update at
    the next draw (:meth:`_flush_new`, the one flush rule), scores are updated in place
    (:meth:`update_scores`) or rebuilt (:meth:`rebuild_priorities`), and a batch is drawn by
    priority with IS weights against the uniform/score mixture (:meth:`sample_weighted`).
    """

    tree: SumTree
    scores: np.ndarray
    max_score: float
    uniform_fraction: float
    beta: float
    _unscored_rows: list[int]

    if TYPE_CHECKING:

        def _initial_score(self) -> float: ...
        def priority(self, scores: np.ndarray | float) -> np.ndarray: ...
        def row_indices(self, rows: np.ndarray | list[int]) -> np.ndarray: ...
        def valid_indices(self) -> np.ndarray: ...
        def n_valid(self) -> int: ...
        def uniform_indices(self, n: int) -> np.ndarray: ...
        def _sanitize(self, scores: np.ndarray) -> np.ndarray: ...
        def set_all_scores(self, indices: np.ndarray, scores: np.ndarray) -> None: ...
        def _gather(self, indices: np.ndarray, control: np.ndarray, env: VecNormalize | None) -> tuple[Any, Any]: ...

    def _flush_new(self) -> None:
        """
        Give the rows added since the last flush their initial priority, in one batched tree update.

        ``add`` writes a new row's score at once; deferring the tree update to the next draw keeps
        the per-env-step cost of ``add`` at SB3's level: one tree update per rollout, not per step.
        """
        if not self._unscored_rows:
            return
        rows = np.unique(self._unscored_rows)
        self._unscored_rows = []
        new = self.row_indices(rows)
        initial = self._initial_score()
        self.scores[new] = initial
        self.tree.update(new, np.full(len(new), self.priority(initial)))
        if self.optimize_memory_usage and self.full:
            # The row at self.pos had its observation overwritten by next_obs: unsampleable until rewritten.
            self.tree.update(self.pos * self.n_envs + np.arange(self.n_envs), np.zeros(self.n_envs))

    def update_scores(self, indices: np.ndarray, scores: np.ndarray) -> None:
        """
        Set the scores of some transitions (e.g. ``|TD|`` after a PER update).

        Non-finite scores trigger a warning and fall back to ``score_floor``; the tree never
        holds a NaN or a negative value.

        :param indices: ``(n,)`` flat indices.
        :param scores: ``(n,)`` new scores.
        """
        self._flush_new()
        scores = self._sanitize(scores)
        self.scores[indices] = scores
        if scores.size:
            self.max_score = max(self.max_score, float(scores.max()))
        self.tree.update(indices, self.priority(scores))

    def rebuild_priorities(self) -> None:
        """
        Recompute every priority from the stored scores, the rows not yet flushed at their initial
        score: what a change of ``alpha``, ``epsilon`` or ``score_floor`` (the priority map) needs.
        """
        self._flush_new()
        indices = self.valid_indices()
        self.set_all_scores(indices, self.scores[indices])

    def _leaves(self) -> tuple[np.ndarray, float]:
        """
        The tree's priorities and their total, with the rows not yet flushed counted at their
        initial score: what the next draw will see, computed without writing anything.
        """
        if not self._unscored_rows:
            return self.tree.leaves, self.tree.total
        leaves = self.tree.leaves.copy()
        rows = np.unique(self._unscored_rows)
        leaves[self.row_indices(rows)] = self.priority(self._initial_score())
        if self.optimize_memory_usage and self.full:
            leaves[self.pos * self.n_envs + np.arange(self.n_envs)] = 0.0
        return leaves, float(leaves.sum())

    def sampling_probabilities(self, indices: np.ndarray, uniform_share: float) -> np.ndarray:
        """
        Probability that one batch slot draws each transition, under the uniform/score mixture.

        A query: it reads the scores as the next draw will see them and writes nothing.

        :param indices: ``(n,)`` flat indices of valid transitions.
        :param uniform_share: Share of the batch drawn uniformly.
        :return: ``(n,)`` probabilities ``u / N + (1 - u) * p_i / sum(p)``.
        """
        if len(indices) == 0:  # e.g. HER before the first episode ends: nothing is drawable yet
            return np.zeros(0)
        leaves, total = self._leaves()
        score_part = leaves[indices] / total if total > 0 else np.zeros(len(indices))
        return uniform_share / self.n_valid() + (1.0 - uniform_share) * score_part

    def sample_weighted(self, batch_size: int, env: VecNormalize | None = None) -> WeightedSamples:
        """
        Draw a batch: a uniform share, the rest stratified by priority, with IS weights.

        :param batch_size: Number of transitions.
        :param env: VecNormalize wrapper, to normalise observations/rewards as SB3 does.
        """
        self._flush_new()
        n_uniform = round(batch_size * self.uniform_fraction)
        if self.tree.total <= 0:
            n_uniform = batch_size
        uniform_indices = self.uniform_indices(n_uniform)
        scored_indices = self.tree.sample_stratified(np.random.random(batch_size - n_uniform))
        indices = np.concatenate([uniform_indices, scored_indices])

        probabilities = self.sampling_probabilities(indices, n_uniform / batch_size)
        raw_weights = (self.n_valid() * probabilities) ** -self.beta
        weights = raw_weights / raw_weights.max()

        control = np.zeros(batch_size, dtype=bool)
        control[:n_uniform] = True
        return self._weighted_batch(indices, weights, raw_weights, control, env)

    def _weighted_batch(
        self,
        indices: np.ndarray,
        weights: np.ndarray,
        raw_weights: np.ndarray,
        control: np.ndarray,
        env: VecNormalize | None,
    ) -> WeightedSamples:
        """
        Gather drawn transitions into one batch, every per-sample array in the order of the samples' rows.

        :param indices: ``(n,)`` flat indices, in draw order.
        :param weights: ``(n,)`` the loss weights (IS weights normalised by their batch maximum).
        :param raw_weights: ``(n,)`` the weights to log.
        :param control: ``(n,)`` True for the uniform share.
        :param env: VecNormalize wrapper, to normalise observations/rewards as SB3 does.
        """
        samples, order = self._gather(indices, control, env)
        return WeightedSamples(
            samples=samples,
            indices=indices[order],
            weights=self.to_torch(weights[order].astype(np.float32).reshape(-1, 1)),
            raw_weights=raw_weights[order],
            control=control[order],
        )
