"""Classic proportional prioritized experience replay (Schaul et al., 2016) as an algorithm mixin."""

import numpy as np
import torch as th

from sb3_complementary.common.buffers import WeightedSamples
from sb3_complementary.common.weighted_replay_mixin import WeightedReplayMixin


class PrioritizedMixin(WeightedReplayMixin):
    """
    Priority ``= (|TD| + epsilon) ** alpha``: after each gradient step the sampled transitions'
    scores become their fresh ``|TD|``; new transitions enter with the maximum score seen so far.
    """

    def _replay_feedback(self, batch: WeightedSamples, td_abs: np.ndarray, influence: th.Tensor | None) -> None:
        self._record_weights(batch)
        self.replay_buffer.record_use(batch.indices, td_abs)
        self.replay_buffer.update_scores(batch.indices, td_abs)
