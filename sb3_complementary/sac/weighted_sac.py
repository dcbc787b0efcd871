"""SAC whose critic loss is weighted per sample by importance-sampling weights (the shared SAC train step)."""

import numpy as np
import torch as th
from stable_baselines3 import SAC
from stable_baselines3.common.utils import polyak_update

from sb3_complementary.common.buffers import Samples
from sb3_complementary.common.entropy_coefficient import current_ent_coef
from sb3_complementary.common.losses import weighted_mse
from sb3_complementary.common.weighted_algorithm import WeightedAlgorithm


class WeightedSAC(WeightedAlgorithm, SAC):
    """
    SB3 SAC with a weighted replay: the base of ``PrioritizedSAC`` and ``ComplementarySAC``.

    ``train()`` is SB3's ``train()``, comments and all, with three marked changes: (1) the batch
    comes with IS weights, and the actor and entropy-coefficient losses are taken on
    :meth:`~sb3_complementary.common.weighted_algorithm.WeightedAlgorithm._actor_samples` (the same
    batch, or with ``actor_batch="uniform"`` a uniform one of their own); (2) the critics'
    per-sample squared errors are weighted (only the critic's: IS weights correct the bias of the
    value *target* distribution, which only the critic regresses); (3) each step's ``|TD|`` of the
    first critic is fed back to the replay. With all weights equal to 1 and the default
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
                assert isinstance(self.target_entropy, float)
                ent_coef_loss = -(self.log_ent_coef * (log_prob + self.target_entropy).detach()).mean()
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
                # Compute the next Q values: min over all critics targets
                next_q_values = th.cat(self.critic_target(replay_data.next_observations, next_actions), dim=1)
                next_q_values, _ = th.min(next_q_values, dim=1, keepdim=True)
                # add entropy term
                next_q_values = next_q_values - ent_coef * next_log_prob.reshape(-1, 1)
                # td error + entropy term
                target_q_values = replay_data.rewards + (1 - replay_data.dones) * discounts * next_q_values

            # Get current Q-values estimates for each critic network
            # using action from the replay buffer
            current_q_values = self.critic(replay_data.observations, replay_data.actions)

            # Compute critic loss
            # (2) per sample, times its IS weight
            critic_loss = 0.5 * sum(
                weighted_mse(current_q, target_q_values, batch.weights) for current_q in current_q_values
            )
            assert isinstance(critic_loss, th.Tensor)  # for type checker
            critic_losses.append(critic_loss.item())

            # Optimize the critic
            self.critic.optimizer.zero_grad()
            critic_loss.backward()
            self.critic.optimizer.step()
            # (3) the first critic's |TD| fed back to the replay
            self._replay_feedback(batch, current_q_values[0], target_q_values)

            # Compute actor loss
            # Alternative: actor_loss = th.mean(log_prob - qf1_pi)
            # Min over all critic networks
            q_values_pi = th.cat(self.critic(actor_data.observations, actions_pi), dim=1)  # (1)
            min_qf_pi, _ = th.min(q_values_pi, dim=1, keepdim=True)
            actor_loss = (ent_coef * log_prob - min_qf_pi).mean()
            actor_losses.append(actor_loss.item())

            # Optimize the actor
            self.actor.optimizer.zero_grad()
            actor_loss.backward()
            self.actor.optimizer.step()

            # Update target networks
            if gradient_step % self.target_update_interval == 0:
                polyak_update(self.critic.parameters(), self.critic_target.parameters(), self.tau)
                # Copy running stats, see GH issue #996
                polyak_update(self.batch_norm_stats, self.batch_norm_stats_target, 1.0)

        self._n_updates += gradient_steps

        self.logger.record("train/n_updates", self._n_updates, exclude="tensorboard")
        self.logger.record("train/ent_coef", np.mean(ent_coefs))
        self.logger.record("train/actor_loss", np.mean(actor_losses))
        self.logger.record("train/critic_loss", np.mean(critic_losses))
        if len(ent_coef_losses) > 0:
            self.logger.record("train/ent_coef_loss", np.mean(ent_coef_losses))
        self._log_weights()
