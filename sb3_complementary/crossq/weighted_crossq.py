"""CrossQ whose critic loss is weighted per sample by importance-sampling weights (the shared CrossQ train step)."""

import numpy as np
import torch as th
from sb3_contrib import CrossQ

from sb3_complementary.common.buffers import Samples, take_rows
from sb3_complementary.common.entropy_coefficient import current_ent_coef
from sb3_complementary.common.losses import weighted_mse
from sb3_complementary.common.weighted_algorithm import WeightedAlgorithm, side_effect_free


class WeightedCrossQ(WeightedAlgorithm, CrossQ):
    """
    sb3-contrib CrossQ with a weighted replay: the base of ``ComplementaryCrossQ``.

    ``train()`` is sb3-contrib's ``train()``, comments and all, with three marked changes: (1) the
    batch comes with IS weights, and the delayed actor and entropy-coefficient losses are taken on
    :meth:`~sb3_complementary.common.weighted_algorithm.WeightedAlgorithm._actor_samples` (the same
    batch, or with ``actor_batch="uniform"`` a uniform one of their own); (2) the critics'
    per-sample squared errors are weighted (the actor and entropy-coefficient losses are not); (3)
    each step's ``|TD|`` of the first critic is fed back to the replay. A fourth, marked (4), lets
    the joint pass take dict observations (our ``MultiInputPolicy``; sb3-contrib's CrossQ has
    none); on tensors it is sb3-contrib's ``th.cat``. With all weights equal to 1 and the default
    ``actor_batch="shared"`` the update is exactly sb3-contrib's.

    CrossQ has no target network: the training batch's TD target comes from the joint
    batch-norm forward pass of ``(s, a)`` and ``(s', a')``.
    """

    def _td_target(self, data: Samples, ent_coef: th.Tensor | None = None) -> th.Tensor:
        """``(B, 1)`` soft TD target from the critic itself, in the modules' current modes (draws next actions)."""
        if ent_coef is None:
            ent_coef = current_ent_coef(self)
        discounts = data.discounts if data.discounts is not None else self.gamma
        with th.no_grad():
            next_actions, next_log_prob = self.actor.action_log_prob(data.next_observations)
            next_q_values = th.cat(self.critic(data.next_observations, next_actions), dim=1)
            next_q_values, _ = th.min(next_q_values, dim=1, keepdim=True)
            next_q_values = next_q_values - ent_coef * next_log_prob.reshape(-1, 1)
            return data.rewards + (1 - data.dones) * discounts * next_q_values

    @staticmethod
    def _joint_observations(data: Samples) -> th.Tensor | dict[str, th.Tensor]:
        """``(2B, ...)`` the observations followed by the next observations (key by key for a ``MultiInputPolicy``)."""
        obs, next_obs = data.observations, data.next_observations
        if isinstance(obs, dict):  # MultiInputPolicy: each key's rows joined
            return {key: th.cat([obs[key], next_obs[key]]) for key in obs}  # type: ignore[index]
        return th.cat([obs, next_obs], dim=0)  # type: ignore[list-item]

    def _joint_q_values(self, data: Samples, next_actions: th.Tensor) -> th.Tensor:
        """
        ``(2B, n_critics)`` every critic's value of ``(s, a)`` and ``(s', a')`` in one pass with
        batch norm in training mode (CrossQ's joint batch statistics); it moves the running statistics.
        """
        all_obs = self._joint_observations(data)
        all_actions = th.cat([data.actions, next_actions], dim=0)
        self.critic.set_bn_training_mode(True)
        all_q_values = th.cat(self.critic(all_obs, all_actions), dim=1)
        self.critic.set_bn_training_mode(False)
        return all_q_values

    def _soft_target(
        self, data: Samples, next_q_values: th.Tensor, next_log_prob: th.Tensor, ent_coef: th.Tensor
    ) -> th.Tensor:
        """``(B, 1)`` soft TD target from the joint pass's ``(B, n_critics)`` next-state values."""
        discounts = data.discounts if data.discounts is not None else self.gamma
        with th.no_grad():
            next_q_values, _ = th.min(next_q_values.detach(), dim=1, keepdim=True)
            next_q_values = next_q_values - ent_coef * next_log_prob.reshape(-1, 1)
            return data.rewards + (1 - data.dones) * discounts * next_q_values

    def _current_td_abs(self, data: Samples) -> np.ndarray:
        """
        ``(P,)`` the train step's ``|TD|``, measured the way it measures it: joint training-mode
        passes of ``batch_size`` rows each, so that batch norm normalises every candidate by
        ``B + B`` rows as the train step does, not by the whole pool's ``P + P``. The statistics
        are those of the candidate's chunk of the pool, not of the batch it will train in (which
        the selection has not chosen yet): the nearest measurement that exists before the pick.
        The running batch-norm statistics are put back afterwards (see the mixin's method).
        """
        buffers = list(self.critic.buffers())
        saved = [buffer.clone() for buffer in buffers]
        n = len(data.rewards)
        try:
            with side_effect_free(self.policy, self.device):
                td_abs = []
                for start in range(0, n, self.batch_size):
                    chunk = take_rows(data, np.arange(start, min(start + self.batch_size, n)))
                    next_actions, next_log_prob = self.actor.action_log_prob(chunk.next_observations)
                    all_q_values = self._joint_q_values(chunk, next_actions)
                    current_q_values, next_q_values = th.split(all_q_values, len(chunk.rewards), dim=0)
                    target = self._soft_target(chunk, next_q_values, next_log_prob, current_ent_coef(self))
                    td_abs.append((current_q_values[:, :1] - target).abs().cpu().numpy().reshape(-1))
                return np.concatenate(td_abs)
        finally:
            for buffer, value in zip(buffers, saved, strict=True):
                buffer.copy_(value)

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

        for _ in range(gradient_steps):
            self._n_updates += 1
            # Sample replay buffer
            # (1) the configuration's draw, with its IS weights
            batch = self._draw_batch(batch_size)
            replay_data = batch.samples
            # For n-step replay, discount factor is gamma**n_steps (when no early termination)
            discounts = replay_data.discounts if replay_data.discounts is not None else self.gamma

            # We need to sample because `log_std` may have changed between two gradient steps
            if self.use_sde:
                self.actor.reset_noise()

            # Note: in the following lines we always need to make sure to set train/eval modes
            # of actor and critic carefully. This is because of the BatchNorm layers in the networks
            # which behave differently in train and eval modes.

            if self.log_ent_coef is not None:  # noqa: SIM108
                # Important: detach the variable from the graph
                # so we don't change it with other losses
                # see https://github.com/rail-berkeley/softlearning/issues/60
                ent_coef = th.exp(self.log_ent_coef.detach())
            else:
                ent_coef = self.ent_coef_tensor

            ent_coefs.append(ent_coef.item())

            with th.no_grad():
                # Select action according to policy
                # Use more precise set_training_mode to allow the use of Dropout
                self.actor.set_bn_training_mode(False)
                next_actions, next_log_prob = self.actor.action_log_prob(replay_data.next_observations)

            # Joint forward pass of obs/next_obs and actions/next_state_actions to have only
            # one forward pass.
            #
            # This has two reasons:
            # 1. According to the paper obs/actions and next_obs/next_state_actions are differently
            #    distributed which is the reason why "naively" applying Batch Normalization in SAC fails.
            #    The batch statistics have to instead be calculated for the mixture distribution of obs/next_obs
            #    and actions/next_state_actions. Otherwise, next_obs/next_state_actions are perceived as
            #    out-of-distribution to the Batch Normalization layer, since running statistics are only polyak averaged
            #    over from the live network and have never seen the next batch which is known to be unstable.
            #    Without target networks, the joint forward pass is a simple solution to calculate
            #    the joint batch statistics directly with a single forward pass.
            #
            # 2. From a computational perspective a single forward pass is simply more efficient than
            #    two sequential forward passes.
            all_obs = self._joint_observations(replay_data)  # (4) th.cat, key by key for our MultiInputPolicy
            all_actions = th.cat([replay_data.actions, next_actions], dim=0)
            # Update critic BN stats
            self.critic.set_bn_training_mode(True)
            all_q_values = th.cat(self.critic(all_obs, all_actions), dim=1)
            self.critic.set_bn_training_mode(False)
            # (2 * batch_size, n_critics) -> (batch_size, n_critics), (batch_size, n_critics)
            current_q_values, next_q_values = th.split(all_q_values, batch_size, dim=0)
            # (batch_size, n_critics) -> (n_critics, batch_size, 1)
            current_q_values = current_q_values.T[..., None]

            with th.no_grad():
                # Compute the target Q value
                next_q_values, _ = th.min(next_q_values.detach(), dim=1, keepdim=True)
                # Add entropy term
                next_q_values = next_q_values - ent_coef * next_log_prob.reshape(-1, 1)
                # td error + entropy term
                target_q_values = replay_data.rewards + (1 - replay_data.dones) * discounts * next_q_values

            # Compute critic loss
            # (2) per sample, times its IS weight
            critic_loss = 0.5 * sum(
                weighted_mse(current_q, target_q_values.detach(), batch.weights) for current_q in current_q_values
            )
            assert isinstance(critic_loss, th.Tensor)  # for type checker
            critic_losses.append(critic_loss.item())

            # Optimize the critic
            self.critic.optimizer.zero_grad()
            critic_loss.backward()
            self.critic.optimizer.step()
            # (3) the first critic's |TD| fed back to the replay
            self._replay_feedback(batch, current_q_values[0], target_q_values)

            # Delayed policy updates
            if self._n_updates % self.policy_delay == 0:
                # (1) the actor's (and the entropy coefficient's) batch: the same one unless actor_batch="uniform"
                actor_data = self._actor_samples(replay_data, batch_size)
                # Sample action according to policy and update actor BN stats
                self.actor.set_bn_training_mode(True)
                actions_pi, log_prob = self.actor.action_log_prob(actor_data.observations)  # (1)
                log_prob = log_prob.reshape(-1, 1)
                self.actor.set_bn_training_mode(False)

                # Optimize entropy coefficient, also called entropy temperature or alpha in the paper
                if self.ent_coef_optimizer is not None:
                    ent_coef_loss = -(self.log_ent_coef * (log_prob + self.target_entropy).detach()).mean()  # type: ignore[operator]
                    ent_coef_losses.append(ent_coef_loss.item())

                    self.ent_coef_optimizer.zero_grad()
                    ent_coef_loss.backward()
                    self.ent_coef_optimizer.step()

                # Compute actor loss
                self.critic.set_bn_training_mode(False)
                q_values_pi = th.cat(self.critic(actor_data.observations, actions_pi), dim=1)  # (1)

                min_qf_pi, _ = th.min(q_values_pi, dim=1, keepdim=True)
                actor_loss = (ent_coef * log_prob.reshape(-1, 1) - min_qf_pi).mean()
                actor_losses.append(actor_loss.item())

                # Optimize the actor
                self.actor.optimizer.zero_grad()
                actor_loss.backward()
                self.actor.optimizer.step()

        self.logger.record("train/n_updates", self._n_updates, exclude="tensorboard")
        self.logger.record("train/ent_coef", np.mean(ent_coefs))
        if len(actor_losses) > 0:
            self.logger.record("train/actor_loss", np.mean(actor_losses))
        self.logger.record("train/critic_loss", np.mean(critic_losses))
        if len(ent_coef_losses) > 0:
            self.logger.record("train/ent_coef_loss", np.mean(ent_coef_losses))
        self._log_weights()
