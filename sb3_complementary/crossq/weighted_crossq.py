"""CrossQ whose critic loss is weighted per sample by importance-sampling weights (the shared CrossQ train step)."""

import numpy as np
import torch as th
from sb3_contrib import CrossQ

from sb3_complementary.common.buffers import Samples, take_rows
from sb3_complementary.common.entropy_coefficient import current_ent_coef, update_ent_coef
from sb3_complementary.common.losses import weighted_mse
from sb3_complementary.common.weighted_algorithm import WeightedAlgorithm, side_effect_free


class WeightedCrossQ(WeightedAlgorithm, CrossQ):
    """
    sb3-contrib CrossQ with a weighted replay: the base of ``ComplementaryCrossQ``.

    ``train()`` is sb3-contrib's, with these changes: the batch comes with IS weights; the
    critics' per-sample squared errors are weighted (the delayed actor and entropy-coefficient
    losses are not; with ``actor_batch="uniform"`` they are taken on a uniform batch of their own:
    :meth:`~sb3_complementary.common.weighted_algorithm.WeightedAlgorithm._actor_samples`); and each step's ``|TD|`` of
    the first critic is fed back to the replay. With all weights equal to 1 and the default
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

    def _joint_q_values(self, data: Samples, next_actions: th.Tensor) -> th.Tensor:
        """
        ``(2B, n_critics)`` every critic's value of ``(s, a)`` and ``(s', a')`` in one pass with
        batch norm in training mode (CrossQ's joint batch statistics); it moves the running statistics.
        """
        obs, next_obs = data.observations, data.next_observations
        all_obs: th.Tensor | dict[str, th.Tensor]
        if isinstance(obs, dict):  # MultiInputPolicy: each key's rows joined
            all_obs = {key: th.cat([obs[key], next_obs[key]]) for key in obs}  # type: ignore[index]
        else:
            all_obs = th.cat([obs, next_obs], dim=0)  # type: ignore[list-item]
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
        self.policy.set_training_mode(True)
        optimizers = [self.actor.optimizer, self.critic.optimizer]
        if self.ent_coef_optimizer is not None:
            optimizers += [self.ent_coef_optimizer]
        self._update_learning_rate(optimizers)
        self._begin_weighted_train()

        ent_coef_losses, ent_coefs = [], []
        actor_losses, critic_losses = [], []

        for _ in range(gradient_steps):
            self._n_updates += 1
            batch = self._draw_batch(batch_size)
            replay_data = batch.samples

            if self.use_sde:
                self.actor.reset_noise()

            ent_coef = current_ent_coef(self)
            ent_coefs.append(ent_coef.item())

            with th.no_grad():
                self.actor.set_bn_training_mode(False)
                next_actions, next_log_prob = self.actor.action_log_prob(replay_data.next_observations)

            # Joint forward pass of (s, a) and (s', a'), as in CrossQ.
            all_q_values = self._joint_q_values(replay_data, next_actions)
            current_q_values, next_q_values = th.split(all_q_values, batch_size, dim=0)
            current_q_values = current_q_values.T[..., None]
            target_q_values = self._soft_target(replay_data, next_q_values, next_log_prob, ent_coef)

            # The IS weights reach the critic loss only.
            critic_loss = 0.5 * sum(
                weighted_mse(current_q, target_q_values.detach(), batch.weights) for current_q in current_q_values
            )
            assert isinstance(critic_loss, th.Tensor)
            critic_losses.append(critic_loss.item())

            self.critic.optimizer.zero_grad()
            critic_loss.backward()
            self.critic.optimizer.step()

            if self._n_updates % self.policy_delay == 0:
                actor_data = self._actor_samples(replay_data, batch_size)
                self.actor.set_bn_training_mode(True)
                actions_pi, log_prob = self.actor.action_log_prob(actor_data.observations)
                log_prob = log_prob.reshape(-1, 1)
                self.actor.set_bn_training_mode(False)

                ent_coef_loss = update_ent_coef(self, log_prob)
                if ent_coef_loss is not None:
                    ent_coef_losses.append(ent_coef_loss)

                self.critic.set_bn_training_mode(False)
                q_values_pi = th.cat(self.critic(actor_data.observations, actions_pi), dim=1)

                min_qf_pi, _ = th.min(q_values_pi, dim=1, keepdim=True)
                actor_loss = (ent_coef * log_prob.reshape(-1, 1) - min_qf_pi).mean()
                actor_losses.append(actor_loss.item())

                self.actor.optimizer.zero_grad()
                actor_loss.backward()
                self.actor.optimizer.step()

            self._replay_feedback(batch, current_q_values[0], target_q_values)

        self.logger.record("train/n_updates", self._n_updates, exclude="tensorboard")
        self.logger.record("train/ent_coef", np.mean(ent_coefs))
        if len(actor_losses) > 0:
            self.logger.record("train/actor_loss", np.mean(actor_losses))
        self.logger.record("train/critic_loss", np.mean(critic_losses))
        if len(ent_coef_losses) > 0:
            self.logger.record("train/ent_coef_loss", np.mean(ent_coef_losses))
        self._log_weights()
