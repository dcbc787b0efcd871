"""TD3 (and DDPG) whose critic loss is weighted per sample by IS weights (the shared TD3 train step)."""

import numpy as np
import torch as th
from stable_baselines3 import TD3
from stable_baselines3.common.utils import polyak_update

from sb3_complementary.common.buffers import Samples
from sb3_complementary.common.losses import weighted_mse
from sb3_complementary.common.weighted_algorithm import WeightedAlgorithm


class WeightedTD3(WeightedAlgorithm, TD3):
    """
    SB3 TD3 with a weighted replay: the base of ``PrioritizedTD3``, ``ComplementaryTD3`` and
    ``ComplementaryDDPG`` (SB3's DDPG is a TD3 with one critic and no delay or target noise).

    ``train()`` is SB3's ``train()``, comments and all, with three marked changes: (1) the batch
    comes with IS weights, and the delayed actor loss is taken on
    :meth:`~sb3_complementary.common.weighted_algorithm.WeightedAlgorithm._actor_samples` (the same
    batch, or with ``actor_batch="uniform"`` a uniform one of its own); (2) the critics' per-sample
    squared errors are weighted (the actor loss is not); (3) each step's ``|TD|`` of the first
    critic is fed back to the replay. With all weights equal to 1 and the default
    ``actor_batch="shared"`` the update is exactly SB3's.
    """

    def _td_target(self, data: Samples) -> th.Tensor:
        """``(B, 1)`` clipped double-Q target with target policy smoothing (draws the smoothing noise)."""
        discounts = data.discounts if data.discounts is not None else self.gamma
        with th.no_grad():
            noise = data.actions.clone().data.normal_(0, self.target_policy_noise)
            noise = noise.clamp(-self.target_noise_clip, self.target_noise_clip)
            next_actions = (self.actor_target(data.next_observations) + noise).clamp(-1, 1)
            next_q_values = th.cat(self.critic_target(data.next_observations, next_actions), dim=1)
            next_q_values, _ = th.min(next_q_values, dim=1, keepdim=True)
            return data.rewards + (1 - data.dones) * discounts * next_q_values

    def _current_values(self, data: Samples) -> th.Tensor:
        """``(B, 1)`` the first critic's value of the stored action."""
        return self.critic(data.observations, data.actions)[0]

    def train(self, gradient_steps: int, batch_size: int = 100) -> None:
        # Switch to train mode (this affects batch norm / dropout)
        self.policy.set_training_mode(True)

        # Update learning rate according to lr schedule
        self._update_learning_rate([self.actor.optimizer, self.critic.optimizer])
        self._begin_weighted_train()

        actor_losses, critic_losses = [], []
        for _ in range(gradient_steps):
            self._n_updates += 1
            # Sample replay buffer
            # (1) the configuration's draw, with its IS weights
            batch = self._draw_batch(batch_size)
            replay_data = batch.samples
            # For n-step replay, discount factor is gamma**n_steps (when no early termination)
            discounts = replay_data.discounts if replay_data.discounts is not None else self.gamma

            with th.no_grad():
                # Select action according to policy and add clipped noise
                noise = replay_data.actions.clone().data.normal_(0, self.target_policy_noise)
                noise = noise.clamp(-self.target_noise_clip, self.target_noise_clip)
                next_actions = (self.actor_target(replay_data.next_observations) + noise).clamp(-1, 1)

                # Compute the next Q-values: min over all critics targets
                next_q_values = th.cat(self.critic_target(replay_data.next_observations, next_actions), dim=1)
                next_q_values, _ = th.min(next_q_values, dim=1, keepdim=True)
                target_q_values = replay_data.rewards + (1 - replay_data.dones) * discounts * next_q_values

            # Get current Q-values estimates for each critic network
            current_q_values = self.critic(replay_data.observations, replay_data.actions)

            # Compute critic loss
            # (2) per sample, times its IS weight
            critic_loss = sum(weighted_mse(current_q, target_q_values, batch.weights) for current_q in current_q_values)
            assert isinstance(critic_loss, th.Tensor)
            critic_losses.append(critic_loss.item())

            # Optimize the critics
            self.critic.optimizer.zero_grad()
            critic_loss.backward()
            self.critic.optimizer.step()
            # (3) the first critic's |TD| fed back to the replay
            self._replay_feedback(batch, current_q_values[0], target_q_values)

            # Delayed policy updates
            if self._n_updates % self.policy_delay == 0:
                # (1) the actor's batch: the same one unless actor_batch="uniform"
                observations = self._actor_samples(replay_data, batch_size).observations
                # Compute actor loss
                actor_loss = -self.critic.q1_forward(observations, self.actor(observations)).mean()  # type: ignore[arg-type]
                actor_losses.append(actor_loss.item())

                # Optimize the actor
                self.actor.optimizer.zero_grad()
                actor_loss.backward()
                self.actor.optimizer.step()

                polyak_update(self.critic.parameters(), self.critic_target.parameters(), self.tau)
                polyak_update(self.actor.parameters(), self.actor_target.parameters(), self.tau)
                # Copy running stats, see GH issue #996
                polyak_update(self.critic_batch_norm_stats, self.critic_batch_norm_stats_target, 1.0)
                polyak_update(self.actor_batch_norm_stats, self.actor_batch_norm_stats_target, 1.0)

        self.logger.record("train/n_updates", self._n_updates, exclude="tensorboard")
        if len(actor_losses) > 0:
            self.logger.record("train/actor_loss", np.mean(actor_losses))
        self.logger.record("train/critic_loss", np.mean(critic_losses))
        self._log_weights()
