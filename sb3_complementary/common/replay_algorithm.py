"""
The training-time side of a weighted replay: what every ``weighted_*.py`` train step calls.

A train step reads ``batch = self._draw_batch(batch_size)``, computes the parent's loss per sample
times ``batch.weights``, steps the optimizer, and calls ``self._replay_feedback(batch, current,
target)``. :class:`WeightedReplayMixin` holds those shared lines (the tree draw, the feedback, the
``|TD|`` measured without side effects); :class:`ComplementaryMixin` adds the pool draw by fresh
``|TD|`` (LaBER's, the default) or by the extractor's density ratio times it, and the extractor's
schedule, fit and re-score.
The construction of both is in :mod:`~sb3_complementary.common.replay_setup`.
"""

from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import torch as th
from stable_baselines3.common.buffers import ReplayBuffer
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.type_aliases import RolloutReturn, TrainFreq
from stable_baselines3.common.vec_env import VecEnv
from torch import nn

from sb3_complementary.common.buffers import Samples, WeightedSamples
from sb3_complementary.common.extractor import (
    ExperienceExtractor,
    fit_classifier,
    fit_ready,
    held_out_auc,
    ratio_weights,
)
from sb3_complementary.common.replay_setup import (
    IS_EXPONENTS,
    ComplementarySetupMixin,
    ReplaySetupMixin,
)

__all__ = ["ComplementaryMixin", "Samples", "WeightedReplayMixin", "preserved_rng", "side_effect_free"]

#: Percentiles of ``N * P(i)`` recorded as the weight range.
WEIGHT_PERCENTILES = (5, 95)
#: Transitions per forward pass when the whole buffer is re-scored.
RESCORE_CHUNK = 65536


@contextmanager
def preserved_rng(device: th.device | str) -> Iterator[None]:
    """
    Run the block on a fork of torch's global RNG (CPU, plus ``device`` if it is an accelerator).

    Random draws inside it (a SAC actor sampling next actions for the probe batch, a network
    being initialised) do not shift the stream that training draws from afterwards, so a
    weighted algorithm with uniform replay stays bit for bit equal to its parent.

    :param device: The model's device.
    """
    device = th.device(device)
    if device.type == "cpu":
        with th.random.fork_rng(devices=[]):
            yield
    else:
        with th.random.fork_rng(devices=[device.index or 0], device_type=device.type):
            yield


@contextmanager
def side_effect_free(module: nn.Module, device: th.device | str) -> Iterator[None]:
    """
    Evaluate ``module`` without side effects on training.

    No autograd graph, every submodule in eval mode (dropout off; batch-norm layers read their
    running statistics and do not update them), and torch's RNG preserved. Every submodule's
    train/eval flag is restored afterwards, whatever it was.

    :param module: The policy (actor, critics and their targets).
    :param device: The model's device.
    """
    modes = [(m, m.training) for m in module.modules()]
    with preserved_rng(device), th.no_grad():
        # What ``module.train(False)`` does, without nn.Module.__setattr__'s checks (10x faster, every step).
        for submodule, _ in modes:
            object.__setattr__(submodule, "training", False)
        try:
            yield
        finally:
            for submodule, training in modes:
                object.__setattr__(submodule, "training", training)


class WeightedReplayMixin(ReplaySetupMixin):
    """
    The train-step lines shared by every weighted algorithm: :meth:`_begin_weighted_train` (the IS
    exponent of this ``train()`` call), :meth:`_draw_batch` (a batch with IS weights) and
    :meth:`_replay_feedback` (the step's ``|TD|`` back to the replay). A train step states its
    TD target (:meth:`_td_target`) and current estimate (:meth:`_current_values`); the concrete
    mixin decides what the feedback does (:meth:`_feed_back`).
    """

    def _begin_weighted_train(self) -> None:
        """Start a ``train()`` call: set the buffer's IS exponent (:meth:`_is_exponent`)."""
        self.replay_buffer.beta = self._is_exponent()

    def _draw_batch(self, batch_size: int) -> WeightedSamples:
        """One gradient step's batch with its IS weights: from the sum tree, by the stored scores."""
        return self.replay_buffer.sample_weighted(batch_size, env=self._vec_normalize_env)

    def _replay_feedback(self, batch: WeightedSamples, current: th.Tensor, target: th.Tensor) -> None:
        """
        Feed one gradient step back to the replay: its IS weights to the log, its ``|TD|`` to :meth:`_feed_back`.

        :param batch: The step's batch, from :meth:`_draw_batch`.
        :param current: The estimate the TD error is taken of (:meth:`_current_values`'s shape), as trained.
        :param target: The step's TD target (:meth:`_td_target`'s shape).
        """
        self._is_weight_stats.append(batch.raw_weights)
        self._feed_back(batch, self._td_abs(current.detach(), target).cpu().numpy().reshape(-1))

    def _feed_back(self, batch: WeightedSamples, td_abs: np.ndarray) -> None:
        """What the replay does with a step's ``(B,)`` ``|TD|`` (PER writes it as the scores)."""
        raise NotImplementedError

    def _current_td_abs(self, data: Samples) -> np.ndarray:
        """
        ``(n,)`` each sample's ``|TD|`` at the current parameters, the same quantity ``train()``
        feeds back, measured without side effects (for draw-time selection): no graph, eval mode,
        torch's RNG stream untouched. A target that draws (SAC's next actions, TD3's smoothing
        noise) draws on a fork of the stream, so the measurement equals the train step's only
        under the same RNG state.
        """
        with side_effect_free(self.policy, self.device):
            target = self._td_target(data)
            return self._td_abs(self._current_values(data), target).cpu().numpy().reshape(-1)

    def _td_target(self, data: Samples) -> th.Tensor:
        """The algorithm's TD target for a batch."""
        raise NotImplementedError

    def _current_values(self, data: Samples) -> th.Tensor:
        """
        The estimate the TD error is taken of, for a batch: ``(B, 1)`` the first critic's (or the
        Q-network's) value of the stored action, or ``(B, K)`` its quantiles for a quantile critic.
        """
        raise NotImplementedError

    @staticmethod
    def _td_abs(current: th.Tensor, target: th.Tensor) -> th.Tensor:
        """``|TD|`` of a batch from :meth:`_current_values` and :meth:`_td_target` (quantile critics override)."""
        return (current - target).abs()

    def sampling_ess_fraction(self) -> float:
        """ESS fraction of the replay's sampling distribution (1 = uniform); see ``ess_fraction`` of the buffer."""
        return self.replay_buffer.ess_fraction()

    def _log_weights(self) -> None:
        if self._is_weight_stats:
            weights = np.concatenate(self._is_weight_stats)
            self.logger.record("complementary/is_weight_mean", float(weights.mean()))
            self.logger.record("complementary/is_weight_max", float(weights.max()))
            self.logger.record("complementary/beta", self.replay_buffer.beta)
            self._is_weight_stats = []


class ComplementaryMixin(WeightedReplayMixin, ComplementarySetupMixin):
    """
    Replay that picks each gradient step's batch from a uniform pool of candidates by their ``|TD|``
    measured now (times a learned experience extractor's density ratio, with ``density_ratio``).

    By default (``contribution="laber"``: LaBER, Lahire et al. 2022) each gradient step draws
    ``candidate_pool`` batches of uniform candidates, measures their ``|TD|`` with the current
    networks, and down-samples one batch in proportion to ``|TD| + epsilon``, with the IS weights
    ``mean(p) / p_i`` that keep a uniform batch's gradient. No extractor is fitted. It is the one
    configuration the 10-seed study measured not worse than DQN on every entry, with no gain
    (0.88x DQN on CartPole-v1, 1.35x on LunarLander-v3: docs/results/study_laber.md).

    With ``contribution="density_ratio"`` the extractor classifies the fast memory (the freshest
    transitions) against the whole buffer; its odds, the density ratio, say how much a transition
    looks like what the agent does now (:mod:`~sb3_complementary.common.extractor`). The model
    fits it every ``extractor_kwargs["train_freq"]`` and re-scores the buffer every
    ``extractor_kwargs["refresh_interval"]`` env steps, at the end of a rollout; :meth:`fit_extractor`
    and :meth:`refresh_scores` are public, and the extractor is saved with the model. The batch is
    picked by ``(ratio * max(|TD|, score_floor) + epsilon) ** alpha`` after a ``uniform_fraction``
    share picked uniformly (the default until 2026-12-07: docs/changelog.md).

    Put first in the bases (``class ComplementaryX(ComplementaryMixin, WeightedX)``): the constructor
    takes every argument of the parent algorithm, plus these keyword knobs:

    :param contribution: What scores the candidates: ``"laber"`` (fresh ``|TD|`` with LaBER's IS
        weights ``mean(p) / p_i``), ``"fresh_td"`` (fresh ``|TD|`` floored at ``score_floor``, never
        undone by IS weights: LaBER's selection with LAP's floor) or ``"density_ratio"`` (the
        extractor's ratio times fresh ``|TD|``, never undone at ``is_exponent=0``). Only
        ``density_ratio`` fits an extractor. The ``|TD|`` kinds need ``candidate_pool >= 1``.
    :param alpha: Priority exponent, >= 0 (0: uniform draws, the control); change it during training
        with :meth:`set_alpha`. ``"auto"``: a bandit chooses it per window of training from the return
        change that follows (:mod:`~sb3_complementary.common.selection_strength`; screened, not a default).
    :param epsilon: Added to the scores, >= 0.
    :param uniform_fraction: Share of each batch drawn uniformly, in [0, 1].
    :param score_floor: Minimum score, >= 0 (also the fallback for non-finite scores).
    :param candidate_pool: ``k >= 1``: each gradient step selects its batch from ``k * batch_size``
        uniform candidates, their ``|TD|`` measured now by side-effect-free forward passes (skipped
        at ``alpha=0``; with HER, after relabelling). 0: ``density_ratio`` draws from the sum tree
        by the scores of the last re-score.
    :param extractor_kwargs: The extractor's settings (network, schedule, fast memory, ratio
        temperature and cap, IS exponent): :func:`~sb3_complementary.common.extractor_settings.extractor_settings`.
    """

    #: Held-out ROC AUC of the classifier at its last fit (NaN before the first).
    extractor_auc: float
    #: ``num_timesteps`` of the last fit and re-score: the extractor's schedule, saved with the model.
    last_fit_step: int
    last_refresh_step: int
    #: Replay rates ``P * q_i`` of the last 1,000 draw-time selections (with ``candidate_pool``).
    _selection_rates: deque[np.ndarray]

    def _build_extractor(self) -> ExperienceExtractor:
        # Initialising the extractor draws from torch's RNG: on a fork, so that the policy's own draws
        # (a SAC actor sampling actions) stay where the uniform parent algorithm would have them.
        with preserved_rng(self.device):
            return ExperienceExtractor(
                self.replay_buffer.ratio_input_dim,
                self.extractor_settings["net_arch"],
                learning_rate=self.extractor_settings["lr_ratio"] * self.lr_schedule(1.0),
                device=self.device,
            )

    def _is_exponent(self) -> float:
        if self.contribution == "density_ratio":
            return float(self.extractor_settings["is_exponent"])  # the ratio's shift is the point
        return IS_EXPONENTS[self.contribution]

    # ------------------------------------------------------------------ the draw and the feedback
    def _draw_batch(self, batch_size: int) -> WeightedSamples:
        if not self.candidate_pool:
            return super()._draw_batch(batch_size)
        buffer = self.replay_buffer
        # With HER the pool holds relabelled candidates, each scored on its own goal's |TD|.
        candidates = buffer.uniform_indices(self.candidate_pool * batch_size)
        samples, candidates = buffer.gather_pool(candidates, env=self._vec_normalize_env)
        if buffer.alpha == 0:  # every priority is 1 whatever the scores: skip measuring them (same draws)
            scores = np.ones(len(candidates), dtype=np.float32)
        elif self.contribution == "density_ratio":  # "looks like the current agent's data" times "is still wrong"
            scores = buffer.scores[candidates] * np.maximum(self._current_td_abs(samples), buffer.score_floor)
        else:
            scores = self._current_td_abs(samples)
        batch, rates = buffer.select_from_candidates(
            candidates, samples, scores, batch_size, max_normalized=self.contribution != "laber"
        )
        self._selection_rates.append(rates)
        return batch

    def _feed_back(self, batch: WeightedSamples, td_abs: np.ndarray) -> None:
        """Nothing: the scores come from the extractor's re-scores and from ``|TD|`` measured at the draw."""

    # ------------------------------------------------------------------ the extractor's schedule
    def collect_rollouts(
        self,
        env: VecEnv,
        callback: BaseCallback,
        train_freq: TrainFreq,
        replay_buffer: ReplayBuffer,
        action_noise: Any = None,
        learning_starts: int = 0,
        log_interval: int | None = None,
    ) -> RolloutReturn:
        """SB3's ``collect_rollouts``, then the extractor's schedule (:meth:`_run_schedule`) at the rollout's end."""
        rollout = super().collect_rollouts(
            env, callback, train_freq, replay_buffer, action_noise, learning_starts, log_interval
        )
        if rollout.continue_training:
            self._run_schedule()
        return rollout

    def _update_info_buffer(self, infos: list[dict[str, Any]], dones: np.ndarray | None = None) -> None:
        super()._update_info_buffer(infos, dones)
        if self.strength_credit is not None:  # alpha="auto": the return credit's episodes
            for info in infos:
                if "episode" in info:
                    self.strength_credit.record_episode(info["episode"]["r"])

    def _run_schedule(self) -> None:
        """
        Fit every ``train_freq`` env steps and re-score every ``refresh_interval`` env steps; with
        ``alpha="auto"``, set the strength of the next window once one closes.
        """
        steps = self.num_timesteps
        if self.strength_credit is not None and self.strength_credit.step(steps):
            self.set_alpha(self.strength_credit.strength)
            self.logger.record("complementary/strength", self.alpha)
        if steps - self.last_fit_step >= self.extractor_settings["train_freq"]:
            self.last_fit_step = steps
            self.fit_extractor()
        if steps - self.last_refresh_step >= self.extractor_settings["refresh_interval"] and self.replay_buffer.size():
            self.last_refresh_step = steps
            self.refresh_scores()

    def fit_extractor(self) -> float:
        """
        Take the extractor's gradient steps now: balanced BCE of the fast memory against the whole
        buffer, then its held-out ROC AUC (``extractor_auc``). It waits until the buffer holds
        twice the fast memory; ``fresh_td`` and ``laber`` fit nothing.

        :return: Mean loss of the fit (NaN when there was nothing to fit on yet).
        """
        settings, buffer = self.extractor_settings, self.replay_buffer
        if self.contribution != "density_ratio" or not fit_ready(buffer, settings["fast_memory"]):
            return float("nan")
        loss = fit_classifier(
            self.extractor,
            buffer,
            settings["fast_memory"],
            settings["gradient_steps"],
            settings["batch_size"],
            self.replay_rng,
        )
        self.extractor_auc = held_out_auc(self.extractor, buffer, settings["fast_memory"], self.auc_rng)
        self.logger.record("complementary/roc_auc", self.extractor_auc)
        self.logger.record("complementary/extractor_loss", loss)
        return loss

    def refresh_scores(self) -> None:
        """
        Re-score every stored transition with batched forward passes, rebuild the sum tree, and
        log the replay's health (:meth:`replay_diagnostics`, and the scores by age quartile).

        The scores are the tempered, self-normalised, capped ratio of
        :func:`~sb3_complementary.common.extractor.ratio_weights` (all 1 until the first fit).
        ``fresh_td`` and ``laber`` score at draw time and store no scores: only
        :meth:`replay_diagnostics` is logged.
        """
        buffer = self.replay_buffer
        indices = buffer.valid_indices()
        if self.contribution == "density_ratio":
            if np.isnan(self.extractor_auc):  # not fitted yet: every transition counts the same
                weights = np.ones(len(indices), dtype=np.float32)
            else:
                chunks = [indices[start : start + RESCORE_CHUNK] for start in range(0, len(indices), RESCORE_CHUNK)]
                logits = np.concatenate([self.extractor.numpy_logits(buffer.ratio_inputs(c)) for c in chunks])
                settings = self.extractor_settings
                weights = ratio_weights(logits, settings["temperature"], settings["cap"])
            buffer.set_all_scores(indices, weights)
            ages = (buffer.pos - 1 - indices // buffer.n_envs) % buffer.buffer_size  # 0 for the freshest row
            quartile = np.minimum((np.argsort(np.argsort(ages)) * 4) // len(ages), 3)
            scores = buffer.scores[indices]
            for q in range(4):
                if np.any(quartile == q):  # q1 = youngest quarter of the buffer, q4 = oldest
                    self.logger.record(f"complementary/score_age_q{q + 1}", float(scores[quartile == q].mean()))
        for name, value in self.replay_diagnostics().items():
            self.logger.record(f"complementary/{name}", value)
        task_ids = buffer.task_ids.reshape(-1)[indices]
        if task_ids.size and task_ids.min() != task_ids.max():  # a multi-task run
            self._log_task_shares(buffer.task_shares(indices))

    # ------------------------------------------------------------------ diagnostics (queries)
    def sampling_ess_fraction(self) -> float:
        """
        ESS fraction of the sampling distribution (1 = uniform). With draw-time selection, the
        mean over the last 1,000 draws of the selection's ESS within its candidate pool.
        """
        if not self.candidate_pool:
            return super().sampling_ess_fraction()
        if not self._selection_rates:
            return 1.0
        return float(np.mean([1.0 / np.mean(rates**2) for rates in self._selection_rates]))

    def replay_diagnostics(self) -> dict[str, float]:
        """
        What the replay does now, as a query (nothing is written): the ESS fraction of the replay
        distribution (1 = uniform), the range of ``N * P(i)`` over the buffer (``weight_p5``,
        ``weight_p95``, ``weight_max``; 1 everywhere for uniform replay) and the classifier's
        held-out ROC AUC (``roc_auc``, NaN before the first fit). With draw-time selection
        (``candidate_pool``) the draws are decided in the pool, so the range is that of the rates
        ``P * q_i`` over the candidates of the last 1,000 pools. With ``alpha="auto"``, also what
        the bandit learned (``diagnostics()`` of
        :class:`~sb3_complementary.common.selection_strength.WindowedReturnCredit`).
        """
        if self.candidate_pool:
            weights = np.concatenate(self._selection_rates) if self._selection_rates else np.ones(0)
        else:
            weights = self.replay_buffer.replay_weights()
        p5, p95 = np.percentile(weights, WEIGHT_PERCENTILES) if weights.size else (1.0, 1.0)
        return {
            "ess_fraction": self.sampling_ess_fraction(),
            "weight_p5": float(p5),
            "weight_p95": float(p95),
            "weight_max": float(weights.max()) if weights.size else 1.0,
            "roc_auc": self.extractor_auc,
        } | (self.strength_credit.diagnostics() if self.strength_credit is not None else {})

    def _log_task_shares(self, shares: dict[int, tuple[float, float]]) -> None:
        """
        Multi-task runs only (more than one task id stored): per task, the share of replay draws
        (``complementary/task_{k}_sample_share``) beside its share of the stored data
        (``complementary/task_{k}_data_share``), to show whether one task monopolises the replay.
        """
        if len(shares) < 2:
            return  # single-task run: nothing to compare
        for task, (sample_share, data_share) in shares.items():
            self.logger.record(f"complementary/task_{task}_sample_share", sample_share)
            self.logger.record(f"complementary/task_{task}_data_share", data_share)
