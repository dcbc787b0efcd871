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

    ``train()`` is SB3's ``train()``, comments and all, with three marked changes: (1) the batch
    comes with IS weights (``_draw_batch``); (2) the Huber loss is computed per sample and
    weighted; (3) each step's TD errors are fed back to the replay (``_replay_feedback``). With all
    weights equal to 1 the update is exactly SB3's.
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
        # Switch to train mode (this affects batch norm / dropout)
        self.policy.set_training_mode(True)
        # Update learning rate according to schedule
        self._update_learning_rate(self.policy.optimizer)
        self._begin_weighted_train()

        losses = []
        for _ in range(gradient_steps):
            # Sample replay buffer
            # (1) the configuration's draw, with its IS weights
            batch = self._draw_batch(batch_size)
            replay_data = batch.samples
            # For n-step replay, discount factor is gamma**n_steps (when no early termination)
            discounts = replay_data.discounts if replay_data.discounts is not None else self.gamma

            with th.no_grad():
                # Compute the next Q-values using the target network
                next_q_values = self.q_net_target(replay_data.next_observations)
                # Follow greedy policy: use the one with the highest value
                next_q_values, _ = next_q_values.max(dim=1)
                # Avoid potential broadcast issue
                next_q_values = next_q_values.reshape(-1, 1)
                # 1-step TD target
                target_q_values = replay_data.rewards + (1 - replay_data.dones) * discounts * next_q_values

            # Get current Q-values estimates
            current_q_values = self.q_net(replay_data.observations)

            # Retrieve the q-values for the actions from the replay buffer
            current_q_values = th.gather(current_q_values, dim=1, index=replay_data.actions.long())

            # Compute Huber loss (less sensitive to outliers)
            # (2) per sample, times its IS weight
            loss = (batch.weights * F.smooth_l1_loss(current_q_values, target_q_values, reduction="none")).mean()
            losses.append(loss.item())

            # Optimize the policy
            self.policy.optimizer.zero_grad()
            loss.backward()
            # Clip gradient norm
            th.nn.utils.clip_grad_norm_(self.policy.parameters(), self.max_grad_norm)
            self.policy.optimizer.step()
            # (3) the step's |TD| fed back to the replay
            self._replay_feedback(batch, current_q_values, target_q_values)

        # Increase update counter
        self._n_updates += gradient_steps

        self.logger.record("train/n_updates", self._n_updates, exclude="tensorboard")
        self.logger.record("train/loss", np.mean(losses))
        self._log_weights()
