"""TQC whose per-sample quantile Huber critic loss is weighted by IS weights (the shared TQC train step)."""

import numpy as np
import torch as th
from sb3_contrib import TQC
from stable_baselines3.common.utils import polyak_update

from sb3_complementary.common.buffers import Samples
from sb3_complementary.common.entropy_coefficient import current_ent_coef, update_ent_coef
from sb3_complementary.common.losses import quantile_td_abs, weighted_quantile_huber_loss
from sb3_complementary.common.weighted_algorithm import WeightedAlgorithm


class WeightedTQC(WeightedAlgorithm, TQC):
    """
    sb3-contrib TQC with a weighted replay: the base of ``ComplementaryTQC``.

    ``train()`` is sb3-contrib's, with these changes: the batch comes with IS weights; each
    sample's quantile Huber critic loss (averaged over critics, quantiles and truncated target
    atoms) is weighted, while the actor and entropy-coefficient losses are not (with
    ``actor_batch="uniform"`` they are taken on a uniform batch of their own:
    :meth:`~sb3_complementary.common.weighted_algorithm.WeightedAlgorithm._actor_samples`); and each step's ``|TD|`` of
    the first critic's implied Q-value is fed back to the replay. With all weights equal to 1 and
    the default ``actor_batch="shared"`` the update is exactly sb3-contrib's.
    """

    def _td_target(self, data: Samples, ent_coef: th.Tensor | None = None) -> th.Tensor:
        """``(B, 1, N')`` truncated target quantile mixture minus the entropy term (draws next actions)."""
        if ent_coef is None:
            ent_coef = current_ent_coef(self)
        discounts = data.discounts if data.discounts is not None else self.gamma
        batch_size = data.rewards.shape[0]
        with th.no_grad():
            next_actions, next_log_prob = self.actor.action_log_prob(data.next_observations)
            next_quantiles = self.critic_target(data.next_observations, next_actions)
            n_dropped = self.top_quantiles_to_drop_per_net * self.critic.n_critics
            n_target_quantiles = self.critic.quantiles_total - n_dropped
            next_quantiles, _ = th.sort(next_quantiles.reshape(batch_size, -1))
            next_quantiles = next_quantiles[:, :n_target_quantiles]
            target_quantiles = next_quantiles - ent_coef * next_log_prob.reshape(-1, 1)
            target_quantiles = data.rewards + (1 - data.dones) * discounts * target_quantiles
            target_quantiles.unsqueeze_(dim=1)
            return target_quantiles

    def _current_values(self, data: Samples) -> th.Tensor:
        """``(B, K)`` the first critic's quantiles of the stored action."""
        return self.critic(data.observations, data.actions)[:, 0]

    @staticmethod
    def _td_abs(current: th.Tensor, target: th.Tensor) -> th.Tensor:
        return quantile_td_abs(current, target.squeeze(1))

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

            target_quantiles = self._td_target(replay_data, ent_coef)

            current_quantiles = self.critic(replay_data.observations, replay_data.actions)
            # The IS weights reach the critic loss only.
            critic_loss = weighted_quantile_huber_loss(
                current_quantiles, target_quantiles, batch.weights, sum_over_quantiles=False
            )
            critic_losses.append(critic_loss.item())

            self.critic.optimizer.zero_grad()
            critic_loss.backward()
            self.critic.optimizer.step()

            qf_pi = self.critic(actor_data.observations, actions_pi).mean(dim=2).mean(dim=1, keepdim=True)
            actor_loss = (ent_coef * log_prob - qf_pi).mean()
            actor_losses.append(actor_loss.item())

            self.actor.optimizer.zero_grad()
            actor_loss.backward()
            self.actor.optimizer.step()

            if gradient_step % self.target_update_interval == 0:
                polyak_update(self.critic.parameters(), self.critic_target.parameters(), self.tau)
                polyak_update(self.batch_norm_stats, self.batch_norm_stats_target, 1.0)

            self._replay_feedback(batch, current_quantiles[:, 0], target_quantiles)

        self._n_updates += gradient_steps

        self.logger.record("train/n_updates", self._n_updates, exclude="tensorboard")
        self.logger.record("train/ent_coef", np.mean(ent_coefs))
        self.logger.record("train/actor_loss", np.mean(actor_losses))
        self.logger.record("train/critic_loss", np.mean(critic_losses))
        if len(ent_coef_losses) > 0:
            self.logger.record("train/ent_coef_loss", np.mean(ent_coef_losses))
        self._log_weights()
