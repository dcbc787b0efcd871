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

    ``train()`` is SB3's, with these changes: the batch comes with IS weights; the critics'
    per-sample squared errors are weighted (the delayed actor loss is not; with
    ``actor_batch="uniform"`` it is taken on a uniform batch of its own); and, for PER, each
    step's ``|TD|`` of the first critic is fed back to the replay. With all weights equal to 1 and the default
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
        self.policy.set_training_mode(True)
        self._update_learning_rate([self.actor.optimizer, self.critic.optimizer])
        self._begin_weighted_train()

        actor_losses, critic_losses = [], []
        for _ in range(gradient_steps):
            self._n_updates += 1
            batch = self._draw_batch(batch_size)
            replay_data = batch.samples
            target_q_values = self._td_target(replay_data)

            current_q_values = self.critic(replay_data.observations, replay_data.actions)

            # The IS weights reach the critic loss only.
            critic_loss = sum(weighted_mse(current_q, target_q_values, batch.weights) for current_q in current_q_values)
            assert isinstance(critic_loss, th.Tensor)
            critic_losses.append(critic_loss.item())

            self.critic.optimizer.zero_grad()
            critic_loss.backward()
            self.critic.optimizer.step()

            if self._n_updates % self.policy_delay == 0:
                observations = self._actor_samples(replay_data, batch_size).observations
                actor_loss = -self.critic.q1_forward(observations, self.actor(observations)).mean()  # type: ignore[arg-type]
                actor_losses.append(actor_loss.item())

                self.actor.optimizer.zero_grad()
                actor_loss.backward()
                self.actor.optimizer.step()

                polyak_update(self.critic.parameters(), self.critic_target.parameters(), self.tau)
                polyak_update(self.actor.parameters(), self.actor_target.parameters(), self.tau)
                polyak_update(self.critic_batch_norm_stats, self.critic_batch_norm_stats_target, 1.0)
                polyak_update(self.actor_batch_norm_stats, self.actor_batch_norm_stats_target, 1.0)

            self._replay_feedback(batch, current_q_values[0], target_q_values)

        self.logger.record("train/n_updates", self._n_updates, exclude="tensorboard")
        if len(actor_losses) > 0:
            self.logger.record("train/actor_loss", np.mean(actor_losses))
        self.logger.record("train/critic_loss", np.mean(critic_losses))
        self._log_weights()
