"""TQC whose per-sample quantile Huber critic loss is weighted by IS weights (the shared TQC train step)."""

import numpy as np
import torch as th
from sb3_contrib import TQC
from stable_baselines3.common.utils import polyak_update

from sb3_complementary.common.buffers import Samples
from sb3_complementary.common.entropy_coefficient import current_ent_coef
from sb3_complementary.common.losses import quantile_td_abs, weighted_quantile_huber_loss
from sb3_complementary.common.weighted_algorithm import WeightedAlgorithm


class WeightedTQC(WeightedAlgorithm, TQC):
    """
    sb3-contrib TQC with a weighted replay: the base of ``ComplementaryTQC``.

    ``train()`` is sb3-contrib's ``train()``, comments and all, with three marked changes: (1) the
    batch comes with IS weights, and the actor and entropy-coefficient losses are taken on
    :meth:`~sb3_complementary.common.weighted_algorithm.WeightedAlgorithm._actor_samples` (the same
    batch, or with ``actor_batch="uniform"`` a uniform one of their own); (2) each sample's quantile
    Huber critic loss (averaged over critics, quantiles and truncated target atoms) is weighted (the
    actor and entropy-coefficient losses are not); (3) each step's ``|TD|`` of the first critic's
    implied Q-value is fed back to the replay. With all weights equal to 1 and the default
    ``actor_batch="shared"`` the update is exactly sb3-contrib's.
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
        # Switch to train mode (this affects batch norm / dropout)
        self.policy.set_training_mode(True)
        # Update optimizers learning rate
        optimizers = [self.actor.optimizer, self.critic.optimizer]
        if self.ent_coef_optimizer is not None:
            optimizers += [self.ent_coef_optimizer]

        # Update learning rate according to lr schedule
        self._update_learning_rate(optimizers)
        self._begin_weighted_train()

        ent_coef_losses, ent_coefs = [], []
        actor_losses, critic_losses = [], []

        for gradient_step in range(gradient_steps):
            # Sample replay buffer
            # (1) the configuration's draw, with its IS weights; the actor's (and the entropy
            # coefficient's) batch is the same one unless actor_batch="uniform"
            batch = self._draw_batch(batch_size)
            replay_data = batch.samples
            actor_data = self._actor_samples(replay_data, batch_size)
            # For n-step replay, discount factor is gamma**n_steps (when no early termination)
            discounts = replay_data.discounts if replay_data.discounts is not None else self.gamma

            # We need to sample because `log_std` may have changed between two gradient steps
            if self.use_sde:
                self.actor.reset_noise()

            # Action by the current actor for the sampled state
            actions_pi, log_prob = self.actor.action_log_prob(actor_data.observations)  # (1)
            log_prob = log_prob.reshape(-1, 1)

            ent_coef_loss = None
            if self.ent_coef_optimizer is not None and self.log_ent_coef is not None:
                # Important: detach the variable from the graph
                # so we don't change it with other losses
                # see https://github.com/rail-berkeley/softlearning/issues/60
                ent_coef = th.exp(self.log_ent_coef.detach())
                ent_coef_loss = -(self.log_ent_coef * (log_prob + self.target_entropy).detach()).mean()  # type: ignore[operator]
                ent_coef_losses.append(ent_coef_loss.item())
            else:
                ent_coef = self.ent_coef_tensor

            ent_coefs.append(ent_coef.item())

            # Optimize entropy coefficient, also called
            # entropy temperature or alpha in the paper
            if ent_coef_loss is not None and self.ent_coef_optimizer is not None:
                self.ent_coef_optimizer.zero_grad()
                ent_coef_loss.backward()
                self.ent_coef_optimizer.step()

            with th.no_grad():
                # Select action according to policy
                next_actions, next_log_prob = self.actor.action_log_prob(replay_data.next_observations)
                # Compute and cut quantiles at the next state
                # batch x nets x quantiles
                next_quantiles = self.critic_target(replay_data.next_observations, next_actions)

                # Sort and drop top k quantiles to control overestimation.
                n_target_quantiles = self.critic.quantiles_total - self.top_quantiles_to_drop_per_net * self.critic.n_critics  # noqa: E501 # fmt: skip
                next_quantiles, _ = th.sort(next_quantiles.reshape(batch_size, -1))
                next_quantiles = next_quantiles[:, :n_target_quantiles]

                # td error + entropy term
                target_quantiles = next_quantiles - ent_coef * next_log_prob.reshape(-1, 1)
                target_quantiles = replay_data.rewards + (1 - replay_data.dones) * discounts * target_quantiles
                # Make target_quantiles broadcastable to (batch_size, n_critics, n_target_quantiles).
                target_quantiles.unsqueeze_(dim=1)

            # Get current Quantile estimates using action from the replay buffer
            current_quantiles = self.critic(replay_data.observations, replay_data.actions)
            # Compute critic loss, not summing over the quantile dimension as in the paper.
            # (2) per sample, times its IS weight
            critic_loss = weighted_quantile_huber_loss(
                current_quantiles, target_quantiles, batch.weights, sum_over_quantiles=False
            )
            critic_losses.append(critic_loss.item())

            # Optimize the critic
            self.critic.optimizer.zero_grad()
            critic_loss.backward()
            self.critic.optimizer.step()
            # (3) the first critic's |TD| fed back to the replay
            self._replay_feedback(batch, current_quantiles[:, 0], target_quantiles)

            # Compute actor loss
            qf_pi = self.critic(actor_data.observations, actions_pi).mean(dim=2).mean(dim=1, keepdim=True)  # (1)
            actor_loss = (ent_coef * log_prob - qf_pi).mean()
            actor_losses.append(actor_loss.item())

            # Optimize the actor
            self.actor.optimizer.zero_grad()
            actor_loss.backward()
            self.actor.optimizer.step()

            # Update target networks
            if gradient_step % self.target_update_interval == 0:
                polyak_update(self.critic.parameters(), self.critic_target.parameters(), self.tau)
                # Copy running stats, see https://github.com/DLR-RM/stable-baselines3/issues/996
                polyak_update(self.batch_norm_stats, self.batch_norm_stats_target, 1.0)

        self._n_updates += gradient_steps

        self.logger.record("train/n_updates", self._n_updates, exclude="tensorboard")
        self.logger.record("train/ent_coef", np.mean(ent_coefs))
        self.logger.record("train/actor_loss", np.mean(actor_losses))
        self.logger.record("train/critic_loss", np.mean(critic_losses))
        if len(ent_coef_losses) > 0:
            self.logger.record("train/ent_coef_loss", np.mean(ent_coef_losses))
        self._log_weights()
