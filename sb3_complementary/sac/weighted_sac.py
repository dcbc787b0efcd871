"""SAC whose critic loss is weighted per sample by importance-sampling weights (the shared SAC train step)."""

import numpy as np
import torch as th
from stable_baselines3 import SAC
from stable_baselines3.common.utils import polyak_update

from sb3_complementary.common.buffers import Samples
from sb3_complementary.common.entropy_coefficient import current_ent_coef, update_ent_coef
from sb3_complementary.common.losses import weighted_mse
from sb3_complementary.common.weighted_algorithm import WeightedAlgorithm


class WeightedSAC(WeightedAlgorithm, SAC):
    """
    SB3 SAC with a weighted replay: the base of ``PrioritizedSAC`` and ``ComplementarySAC``.

    ``train()`` is SB3's, with these changes: the batch comes with IS weights; the critic's
    per-sample squared error is weighted (the actor and entropy-coefficient losses are not: IS
    weights correct the bias of the value *target* distribution, which only the critic regresses;
    with ``actor_batch="uniform"`` they are taken on a uniform batch of their own:
    :meth:`~sb3_complementary.common.weighted_algorithm.WeightedAlgorithm._actor_samples`); and each step's ``|TD|`` of
    the first critic is fed back to the replay. With all weights equal to 1 and the default
    ``actor_batch="shared"`` the update is exactly SB3's.
    """

    def _td_target(self, data: Samples, ent_coef: th.Tensor | None = None) -> th.Tensor:
        """``(B, 1)`` soft TD target: min over the target critics, minus the entropy term (draws next actions)."""
        if ent_coef is None:
            ent_coef = current_ent_coef(self)
        discounts = data.discounts if data.discounts is not None else self.gamma
        with th.no_grad():
            next_actions, next_log_prob = self.actor.action_log_prob(data.next_observations)
            next_q_values = th.cat(self.critic_target(data.next_observations, next_actions), dim=1)
            next_q_values, _ = th.min(next_q_values, dim=1, keepdim=True)
            next_q_values = next_q_values - ent_coef * next_log_prob.reshape(-1, 1)
            return data.rewards + (1 - data.dones) * discounts * next_q_values

    def _current_values(self, data: Samples) -> th.Tensor:
        """``(B, 1)`` the first critic's value of the stored action."""
        return self.critic(data.observations, data.actions)[0]

    def train(self, gradient_steps: int, batch_size: int = 64) -> None:
        self.policy.set_training_mode(True)
        optimizers = [self.actor.optimizer, self.critic.optimizer]
        if self.ent_coef_optimizer is not None:
            optimizers += [self.ent_coef_optimizer]
        self._update_learning_rate(optimizers)
        self._begin_weighted_train()

        ent_coef_losses, ent_coefs = [], []
        actor_losses, critic_losses = [], []

        for gradient_step in range(gradient_steps):
            batch = self._draw_batch(batch_size)
            replay_data = batch.samples
            actor_data = self._actor_samples(replay_data, batch_size)

            if self.use_sde:
                self.actor.reset_noise()

            actions_pi, log_prob = self.actor.action_log_prob(actor_data.observations)
            log_prob = log_prob.reshape(-1, 1)

            ent_coef = current_ent_coef(self)  # read before its update, as SB3 does
            ent_coefs.append(ent_coef.item())
            ent_coef_loss = update_ent_coef(self, log_prob)
            if ent_coef_loss is not None:
                ent_coef_losses.append(ent_coef_loss)

            target_q_values = self._td_target(replay_data, ent_coef)

            current_q_values = self.critic(replay_data.observations, replay_data.actions)

            # The IS weights reach the critic loss only.
            critic_loss = 0.5 * sum(
                weighted_mse(current_q, target_q_values, batch.weights) for current_q in current_q_values
            )
            assert isinstance(critic_loss, th.Tensor)
            critic_losses.append(critic_loss.item())

            self.critic.optimizer.zero_grad()
            critic_loss.backward()
            self.critic.optimizer.step()

            q_values_pi = th.cat(self.critic(actor_data.observations, actions_pi), dim=1)
            min_qf_pi, _ = th.min(q_values_pi, dim=1, keepdim=True)
            actor_loss = (ent_coef * log_prob - min_qf_pi).mean()
            actor_losses.append(actor_loss.item())

            self.actor.optimizer.zero_grad()
            actor_loss.backward()
            self.actor.optimizer.step()

            if gradient_step % self.target_update_interval == 0:
                polyak_update(self.critic.parameters(), self.critic_target.parameters(), self.tau)
                polyak_update(self.batch_norm_stats, self.batch_norm_stats_target, 1.0)

            self._replay_feedback(batch, current_q_values[0], target_q_values)

        self._n_updates += gradient_steps

        self.logger.record("train/n_updates", self._n_updates, exclude="tensorboard")
        self.logger.record("train/ent_coef", np.mean(ent_coefs))
        self.logger.record("train/actor_loss", np.mean(actor_losses))
        self.logger.record("train/critic_loss", np.mean(critic_losses))
        if len(ent_coef_losses) > 0:
            self.logger.record("train/ent_coef_loss", np.mean(ent_coef_losses))
        self._log_weights()
