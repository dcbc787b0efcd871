"""Proportional prioritized experience replay (Schaul et al., 2016) as an algorithm mixin."""

from typing import Any

import numpy as np

from sb3_complementary.common.buffers import WeightedSamples
from sb3_complementary.common.her_replay_buffer import PrioritizedHerReplayBuffer
from sb3_complementary.common.migration import check_old_knobs
from sb3_complementary.common.replay_algorithm import WeightedReplayMixin
from sb3_complementary.common.validation import check_range


class PrioritizedMixin(WeightedReplayMixin):
    """
    Priority ``= (|TD| + epsilon) ** alpha``: after each gradient step the sampled transitions'
    scores become their fresh ``|TD|``; new transitions enter with the maximum score seen so far.

    Put first in the bases of an algorithm (``class PrioritizedX(PrioritizedMixin, WeightedX)``):
    its constructor takes every argument of the parent algorithm (positional ones included), plus:

    :param alpha: Priority exponent (0 = uniform), >= 0.
    :param beta: Initial IS exponent in [0, 1], annealed linearly to 1 over ``learn()``.
    :param epsilon: Added to ``|TD|`` so no transition has zero probability, >= 0.
    :param uniform_fraction: Share of each batch drawn uniformly, in [0, 1] (0 = classic PER).
    :param score_floor: Lower clip of the scores, >= 0.
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
        _init_setup_model: bool = True,
        **kwargs: Any,
    ) -> None:
        check_old_knobs(type(self).__name__, kwargs, complementary=False)
        kwargs["_init_setup_model"] = False  # the knobs below must exist before _setup_model runs
        super().__init__(*args, **kwargs)
        check_range("beta", beta, low=0.0, high=1.0)
        self.beta = beta
        self._init_replay_knobs(alpha, epsilon, uniform_fraction, score_floor)
        if _init_setup_model:
            self._setup_model()

    def _is_exponent(self) -> float:
        """``beta`` annealed linearly to 1 over the budget (PER's schedule)."""
        progress = 1.0 - self._current_progress_remaining
        return self.beta + (1.0 - self.beta) * progress

    def _feed_back(self, batch: WeightedSamples, td_abs: np.ndarray) -> None:
        self.replay_buffer.update_scores(batch.indices, td_abs)
