"""DQN whose per-sample Huber loss is weighted by importance-sampling weights (the shared DQN train step)."""

import numpy as np
import torch as th
from stable_baselines3 import DQN
from torch.nn import functional as F

from sb3_complementary.common.buffers import Samples
from sb3_complementary.common.weighted_algorithm import WeightedAlgorithm


class WeightedDQN(WeightedAlgorithm, DQN):
    """
    SB3 DQN with a weighted replay: the base of ``PrioritizedDQN`` and ``ComplementaryDQN``.

    ``train()`` is SB3's, with three changes: the batch comes with IS weights (``_draw_batch``),
    the Huber loss is computed per sample and weighted, and each step's TD errors are fed back to
    the replay (``_replay_feedback``). With all weights equal to 1 the update is exactly SB3's.
    """

    def _td_target(self, data: Samples) -> th.Tensor:
        """``(B, 1)`` 1-step (or n-step) TD target from the target network."""
        discounts = data.discounts if data.discounts is not None else self.gamma
        with th.no_grad():
            next_q_values, _ = self.q_net_target(data.next_observations).max(dim=1)
            return data.rewards + (1 - data.dones) * discounts * next_q_values.reshape(-1, 1)

    def _current_values(self, data: Samples) -> th.Tensor:
        """``(B, 1)`` Q-value of the stored action."""
        return th.gather(self.q_net(data.observations), dim=1, index=data.actions.long())

    def train(self, gradient_steps: int, batch_size: int = 100) -> None:
        self.policy.set_training_mode(True)
        self._update_learning_rate(self.policy.optimizer)
        self._begin_weighted_train()

        losses = []
        for _ in range(gradient_steps):
            batch = self._draw_batch(batch_size)
            data = batch.samples
            target_q_values = self._td_target(data)

            current_q_values = th.gather(self.q_net(data.observations), dim=1, index=data.actions.long())
            per_sample_loss = F.smooth_l1_loss(current_q_values, target_q_values, reduction="none")
            loss = (batch.weights * per_sample_loss).mean()
            losses.append(loss.item())

            self.policy.optimizer.zero_grad()
            loss.backward()
            th.nn.utils.clip_grad_norm_(self.policy.parameters(), self.max_grad_norm)
            self.policy.optimizer.step()

            self._replay_feedback(batch, current_q_values, target_q_values)

        self._n_updates += gradient_steps
        self.logger.record("train/n_updates", self._n_updates, exclude="tensorboard")
        self.logger.record("train/loss", np.mean(losses))
        self._log_weights()
