"""QR-DQN whose per-sample quantile Huber loss is weighted by IS weights (the shared QR-DQN train step)."""

import numpy as np
import torch as th
from sb3_contrib import QRDQN

from sb3_complementary.common.buffers import Samples
from sb3_complementary.common.losses import quantile_td_abs, weighted_quantile_huber_loss
from sb3_complementary.common.weighted_algorithm import WeightedAlgorithm


class WeightedQRDQN(WeightedAlgorithm, QRDQN):
    """
    sb3-contrib QR-DQN with a weighted replay: the base of ``PrioritizedQRDQN`` and ``ComplementaryQRDQN``.

    ``train()`` is sb3-contrib's ``train()``, comments and all, with three marked changes: (1) the
    batch comes with IS weights; (2) each sample's quantile Huber loss (summed over the current
    quantiles, averaged over the target ones) is weighted; (3) each step's ``|TD|`` of the implied
    Q-value is fed back to the replay. With all weights equal to 1 the update is exactly sb3-contrib's.
    """

    def _td_target(self, data: Samples) -> th.Tensor:
        """``(B, N)`` target quantiles of the greedy next action (by mean), from the target network."""
        discounts = data.discounts if data.discounts is not None else self.gamma
        batch_size = data.rewards.shape[0]
        with th.no_grad():
            next_quantiles = self.quantile_net_target(data.next_observations)
            next_greedy_actions = next_quantiles.mean(dim=1, keepdim=True).argmax(dim=2, keepdim=True)
            next_greedy_actions = next_greedy_actions.expand(batch_size, self.n_quantiles, 1)
            next_quantiles = next_quantiles.gather(dim=2, index=next_greedy_actions).squeeze(dim=2)
            return data.rewards + (1 - data.dones) * discounts * next_quantiles

    def _current_values(self, data: Samples) -> th.Tensor:
        """``(B, N)`` quantiles of the stored action."""
        actions = data.actions[..., None].long().expand(len(data.actions), self.n_quantiles, 1)
        return th.gather(self.quantile_net(data.observations), dim=2, index=actions).squeeze(dim=2)

    @staticmethod
    def _td_abs(current: th.Tensor, target: th.Tensor) -> th.Tensor:
        return quantile_td_abs(current, target)

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
                # Compute the quantiles of next observation
                next_quantiles = self.quantile_net_target(replay_data.next_observations)
                # Compute the greedy actions which maximize the next Q values
                next_greedy_actions = next_quantiles.mean(dim=1, keepdim=True).argmax(dim=2, keepdim=True)
                # Make "n_quantiles" copies of actions, and reshape to (batch_size, n_quantiles, 1)
                next_greedy_actions = next_greedy_actions.expand(batch_size, self.n_quantiles, 1)
                # Follow greedy policy: use the one with the highest Q values
                next_quantiles = next_quantiles.gather(dim=2, index=next_greedy_actions).squeeze(dim=2)
                # 1-step TD target
                target_quantiles = replay_data.rewards + (1 - replay_data.dones) * discounts * next_quantiles

            # Get current quantile estimates
            current_quantiles = self.quantile_net(replay_data.observations)

            # Make "n_quantiles" copies of actions, and reshape to (batch_size, n_quantiles, 1).
            actions = replay_data.actions[..., None].long().expand(batch_size, self.n_quantiles, 1)
            # Retrieve the quantiles for the actions from the replay buffer
            current_quantiles = th.gather(current_quantiles, dim=2, index=actions).squeeze(dim=2)

            # Compute Quantile Huber loss, summing over a quantile dimension as in the paper.
            # (2) per sample, times its IS weight
            loss = weighted_quantile_huber_loss(
                current_quantiles, target_quantiles, batch.weights, sum_over_quantiles=True
            )
            losses.append(loss.item())

            # Optimize the policy
            self.policy.optimizer.zero_grad()
            loss.backward()
            # Clip gradient norm
            if self.max_grad_norm is not None:
                th.nn.utils.clip_grad_norm_(self.policy.parameters(), self.max_grad_norm)
            self.policy.optimizer.step()
            # (3) the step's |TD| fed back to the replay
            self._replay_feedback(batch, current_quantiles, target_quantiles)

        # Increase update counter
        self._n_updates += gradient_steps

        self.logger.record("train/n_updates", self._n_updates, exclude="tensorboard")
        self.logger.record("train/loss", np.mean(losses))
        self._log_weights()
