"""The callback that fits the experience extractor and re-scores the replay buffer inside SB3's loop."""

from typing import TYPE_CHECKING, Any

import numpy as np
import torch as th
from stable_baselines3.common.callbacks import BaseCallback
from torch.nn import functional as F

if TYPE_CHECKING:
    from sb3_complementary.common.complementary_mixin import ComplementaryMixin


class ExtractorTrainingCallback(BaseCallback):
    """
    Co-evolves the experience extractor with the policy (DESIGN §3, step 3).

    At the end of each rollout (never inside the per-sample hot loop):

    - every ``extractor_train_freq`` env steps it closes the contribution signal's window and
      fits the extractor on the label store: binary cross-entropy on the contribution labels
      plus ``coupling_coef`` × KL(extractor's sampling distribution ‖ uniform) on a uniform
      sample of the buffer, which bounds how far the co-evolution can pull the replay away
      from uniform (DESIGN §6);
    - every ``refresh_interval`` env steps it re-scores the whole buffer with batched forward
      passes and rebuilds the sum tree (and, with several task ids in the buffer, logs each
      task's share of the replay draws beside its share of the data).

    ``ComplementaryDQN.learn()`` adds one automatically unless the user passes their own. Used
    directly, its arguments override the model's knobs of the same name.

    :param extractor_train_freq: Env steps between extractor fits (model's knob if None).
    :param refresh_interval: Env steps between full re-scores (model's knob if None).
    :param coupling_coef: Weight of the KL-to-uniform term (model's knob if None).
    :param gradient_steps: Extractor gradient steps per fit (model's knob if None).
    :param batch_size: Extractor minibatch size (model's knob if None).
    :param verbose: Verbosity level.
    """

    model: "ComplementaryMixin"

    def __init__(
        self,
        extractor_train_freq: int | None = None,
        refresh_interval: int | None = None,
        coupling_coef: float | None = None,
        gradient_steps: int | None = None,
        batch_size: int | None = None,
        verbose: int = 0,
    ) -> None:
        super().__init__(verbose)
        self._overrides = {
            "extractor_train_freq": extractor_train_freq,
            "refresh_interval": refresh_interval,
            "coupling_coef": coupling_coef,
            "extractor_gradient_steps": gradient_steps,
            "extractor_batch_size": batch_size,
        }
        self._last_fit = 0
        self._last_refresh = 0
        self.last_loss = float("nan")

    def _knob(self, name: str) -> Any:
        value = self._overrides[name]
        return getattr(self.model, name) if value is None else value

    def _init_callback(self) -> None:
        if not hasattr(self.model, "extractor"):
            raise ValueError(
                f"ExtractorTrainingCallback needs a Complementary algorithm (with an extractor), "
                f"got {type(self.model).__name__}"
            )
        self._last_fit = self._last_refresh = self.model.num_timesteps

    def _on_step(self) -> bool:
        return True

    def _on_rollout_end(self) -> None:
        steps = self.model.num_timesteps
        if steps - self._last_fit >= self._knob("extractor_train_freq"):
            self._last_fit = steps
            self.fit()
        if steps - self._last_refresh >= self._knob("refresh_interval") and self.model.replay_buffer.size() > 0:
            self._last_refresh = steps
            self.refresh()

    def fit(self) -> None:
        """Close the signal's window and take the extractor's gradient steps on the label store."""
        model = self.model
        buffer = model.replay_buffer
        extractor = model.extractor
        model.contribution_signal.close_window(buffer.features.pop_finished_returns())
        store = model.label_store
        batch_size = self._knob("extractor_batch_size")
        if len(store) < batch_size:
            return
        coupling_coef = self._knob("coupling_coef")
        losses = []
        for _ in range(self._knob("extractor_gradient_steps")):
            features, labels = store.sample(batch_size, model.replay_rng)
            x = th.as_tensor(features, device=extractor.device)
            extractor.normalizer.update(x)
            loss = F.binary_cross_entropy_with_logits(
                extractor.logits(x), th.as_tensor(labels, device=extractor.device)
            )
            if coupling_coef > 0:
                loss = loss + coupling_coef * self._kl_to_uniform(batch_size)
            extractor.optimizer.zero_grad()
            loss.backward()
            extractor.optimizer.step()
            losses.append(loss.item())
        self.last_loss = float(np.mean(losses))
        self.logger.record("complementary/extractor_loss", self.last_loss)
        self.logger.record("complementary/positive_label_share", store.positive_share())

    def _kl_to_uniform(self, n: int) -> th.Tensor:
        """KL(P ‖ U) of the score-proportional distribution over a uniform sample of the buffer (differentiable)."""
        buffer = self.model.replay_buffer
        valid = buffer.valid_indices()
        indices = valid[self.model.replay_rng.integers(0, len(valid), size=n)]
        x = th.as_tensor(buffer.feature_matrix(indices), device=self.model.extractor.device)
        priorities = (self.model.extractor(x).clamp_min(buffer.score_floor) + buffer.epsilon) ** buffer.alpha
        p = priorities / priorities.sum()
        return (p * th.log(p * n + 1e-12)).sum()

    def refresh(self) -> None:
        """Re-score every stored transition and log the sampling distribution's health."""
        buffer = self.model.replay_buffer
        indices = buffer.refresh_scores(self.model.extractor.score)
        self.logger.record("complementary/ess_fraction", self.model.sampling_ess_fraction())
        rows, envs = np.divmod(indices, buffer.n_envs)
        ages = buffer.n_added - buffer.features.insert_step[rows, envs]
        quartile = np.minimum((np.argsort(np.argsort(ages)) * 4) // len(ages), 3)
        scores = buffer.scores[indices]
        for q in range(4):
            if np.any(quartile == q):
                # q1 = youngest quarter of the buffer, q4 = oldest.
                self.logger.record(f"complementary/score_age_q{q + 1}", float(scores[quartile == q].mean()))
        self._log_task_shares(buffer.task_shares(indices))

    def _log_task_shares(self, shares: dict[int, tuple[float, float]]) -> None:
        """
        Multi-task runs only (more than one task id stored): per task, the share of replay draws
        (``complementary/task_{k}_sample_share``) beside its share of the stored data
        (``complementary/task_{k}_data_share``), to show whether one task monopolises the replay.

        :param shares: From :meth:`~sb3_complementary.common.buffers.ComplementaryReplayBuffer.task_shares`.
        """
        if len(shares) < 2:
            return  # single-task run: nothing to compare
        for task, (sample_share, data_share) in shares.items():
            self.logger.record(f"complementary/task_{task}_sample_share", sample_share)
            self.logger.record(f"complementary/task_{task}_data_share", data_share)
