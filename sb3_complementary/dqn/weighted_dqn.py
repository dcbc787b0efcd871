"""DQN whose per-sample Huber loss is weighted by importance-sampling weights (the shared DQN train step)."""

import numpy as np
import torch as th
from stable_baselines3 import DQN
from stable_baselines3.common.type_aliases import PyTorchObs
from torch.nn import functional as F

from sb3_complementary.common.side_effects import side_effect_free
from sb3_complementary.common.weighted_replay_mixin import Samples, WeightedReplayMixin


class WeightedDQN(WeightedReplayMixin, DQN):
    """
    SB3 DQN with a weighted replay: the base of ``PrioritizedDQN`` and ``ComplementaryDQN``.

    ``train()`` is SB3's, with three changes: the batch comes with IS weights, the Huber loss is
    computed per sample and weighted, and each step's ``|TD|`` (plus, when the contribution
    signal needs it, each sample's influence on a probe batch of fresh experience) is fed back
    to the replay through ``_replay_feedback``, which the mixin of the concrete class provides.
    With all weights equal to 1 the update is exactly SB3's.
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

    def _reducible_loss(self, data: Samples) -> np.ndarray:
        """
        ``(n,)`` ReLo's priority: ``max(0, Huber(Q(s, a), y) - Huber(Q_target(s, a), y))``, with ``y``
        the TD target of the target network (the part of the loss training can still remove).
        """
        with side_effect_free(self.policy, self.device):
            target = self._td_target(data)
            index = data.actions.long()
            online = th.gather(self.q_net(data.observations), dim=1, index=index)
            frozen = th.gather(self.q_net_target(data.observations), dim=1, index=index)
            reducible = F.smooth_l1_loss(online, target, reduction="none") - F.smooth_l1_loss(
                frozen, target, reduction="none"
            )
            return reducible.clamp_min(0.0).cpu().numpy().reshape(-1)

    def _q_values_and_penultimate(self, observations: PyTorchObs) -> tuple[th.Tensor, th.Tensor]:
        """``(B, n_actions)`` Q-values and ``(B, H)`` inputs of the last linear layer, in one forward pass."""
        features = self.q_net.extract_features(observations, self.q_net.features_extractor)
        penultimate = self.q_net.q_net[:-1](features)
        return self.q_net.q_net[-1](penultimate), penultimate

    @staticmethod
    def _huber_output_grad(q_values: th.Tensor, actions: th.Tensor, td_errors: th.Tensor) -> th.Tensor:
        """
        ``(B, n_actions)`` gradient of each sample's own Huber loss w.r.t. the Q-values.

        ``smooth_l1`` (beta 1) has derivative ``clip(δ, -1, 1)``, on the taken action only. The
        closed form is a few times cheaper than an extra autograd pass per step.
        """
        grad = th.zeros_like(q_values)
        return grad.scatter_(1, actions.long(), td_errors.clamp(-1.0, 1.0))

    def _probe_gradients(self, probe: Samples, probe_target: th.Tensor) -> tuple[th.Tensor, th.Tensor]:
        """Per-sample output gradients ``(M, n_actions)`` and penultimate features ``(M, H)`` on the probe batch."""
        q_values, penultimate = self._q_values_and_penultimate(probe.observations)
        td_errors = th.gather(q_values, dim=1, index=probe.actions.long()) - probe_target
        return self._huber_output_grad(q_values, probe.actions, td_errors), penultimate

    def train(self, gradient_steps: int, batch_size: int = 100) -> None:
        self.policy.set_training_mode(True)
        self._update_learning_rate(self.policy.optimizer)
        self._begin_weighted_train()

        losses = []
        for _ in range(gradient_steps):
            batch = self._draw_batch(batch_size)
            data = batch.samples
            target_q_values = self._td_target(data)

            q_values, penultimate = self._q_values_and_penultimate(data.observations)
            current_q_values = th.gather(q_values, dim=1, index=data.actions.long())
            per_sample_loss = F.smooth_l1_loss(current_q_values, target_q_values, reduction="none")
            loss = (batch.weights * per_sample_loss).mean()
            losses.append(loss.item())

            td_errors = (current_q_values - target_q_values).detach()
            influence = None
            if self._measures_influence():  # measured at the parameters the step starts from
                out_grad = self._huber_output_grad(q_values, data.actions, td_errors)
                influence = self._influence(out_grad, penultimate)

            self.policy.optimizer.zero_grad()
            loss.backward()
            th.nn.utils.clip_grad_norm_(self.policy.parameters(), self.max_grad_norm)
            self.policy.optimizer.step()

            self._replay_feedback(batch, td_errors.abs().cpu().numpy().reshape(-1), influence)

        self._n_updates += gradient_steps
        self.logger.record("train/n_updates", self._n_updates, exclude="tensorboard")
        self.logger.record("train/loss", np.mean(losses))
        self._log_weights()
