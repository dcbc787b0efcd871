"""Proportional prioritized experience replay (Schaul et al., 2016) as an algorithm mixin, by |TD| or by ReLo."""

from typing import Any

import numpy as np
import torch as th

from sb3_complementary.common.buffers import WeightedSamples
from sb3_complementary.common.her_replay_buffer import PrioritizedHerReplayBuffer
from sb3_complementary.common.validation import check_choice
from sb3_complementary.common.weighted_replay_mixin import WeightedReplayMixin

#: What a transition's priority is: its |TD| (PER) or its reducible loss (ReLo).
PRIORITIES = ("td", "relo")


class PrioritizedMixin(WeightedReplayMixin):
    """
    Priority ``= (|TD| + epsilon) ** alpha``: after each gradient step the sampled transitions'
    scores become their fresh ``|TD|``; new transitions enter with the maximum score seen so far.
    With ``priority="relo"`` the score is instead the reducible loss of Sujit et al. (2023,
    "Prioritizing Samples in Reinforcement Learning with Reducible Loss"): the sample's loss under
    the online network minus its loss under the target network, on the same TD target, clipped at
    0, measured when the batch is drawn.

    Put first in the bases of an algorithm (``class PrioritizedX(PrioritizedMixin, WeightedX)``):
    its constructor takes every argument of the parent algorithm (positional ones included), plus:

    :param alpha: Priority exponent (0 = uniform), >= 0.
    :param beta: Initial IS exponent in [0, 1], annealed to 1.
    :param epsilon: Added to ``|TD|`` so no transition has zero probability, >= 0.
    :param uniform_fraction: Share of each batch drawn uniformly, in [0, 1] (0 = classic PER).
    :param score_floor: Lower clip of the scores, >= 0.
    :param initial_score: ``"max"`` (new transitions get the largest ``|TD|`` seen, as in the paper) or ``"neutral"``.
    :param include_observation: Store small flat observations among the features (unused by PER itself).
    :param eviction: ``"fifo"`` (as SB3) or ``"lowest_score"`` (drop a low-``|TD|`` transition instead of the oldest).
    :param priority: ``"td"`` (PER, the default) or ``"relo"`` (reducible loss; DQN only so far).
    """

    her_buffer_class = PrioritizedHerReplayBuffer

    def __init__(
        self,
        *args: Any,
        alpha: float = 0.6,
        beta: float = 0.4,
        epsilon: float = 1e-6,
        uniform_fraction: float = 0.0,
        score_floor: float = 0.0,
        initial_score: str = "max",
        include_observation: bool = False,
        eviction: str = "fifo",
        priority: str = "td",
        _init_setup_model: bool = True,
        **kwargs: Any,
    ) -> None:
        kwargs["_init_setup_model"] = False  # the knobs below must exist before _setup_model runs
        super().__init__(*args, **kwargs)
        self._init_replay_knobs(
            alpha, beta, epsilon, uniform_fraction, score_floor, initial_score, include_observation, eviction
        )
        check_choice("priority", priority, PRIORITIES)
        if priority == "relo" and type(self)._reducible_loss is WeightedReplayMixin._reducible_loss:
            raise ValueError(f"priority='relo': {type(self).__name__} cannot measure the reducible loss yet; use 'td'")
        self.priority = priority
        if _init_setup_model:
            self._setup_model()

    def _draw_batch(self, batch_size: int) -> WeightedSamples:
        batch = super()._draw_batch(batch_size)
        if self.priority == "relo":  # at the parameters the step starts from, as the authors measure it
            batch = batch._replace(fresh_scores=self._reducible_loss(batch.samples))
        return batch

    def _replay_feedback(self, batch: WeightedSamples, td_abs: np.ndarray, influence: th.Tensor | None) -> None:
        self._record_weights(batch)
        self.replay_buffer.record_use(batch.indices, td_abs)
        self.replay_buffer.update_scores(batch.indices, td_abs if batch.fresh_scores is None else batch.fresh_scores)
