"""The Complementary algorithms' replay: the experience extractor's state and schedule, the pool draw, the feedback."""

import warnings
from collections import deque
from typing import Any

import numpy as np
from stable_baselines3.common.buffers import ReplayBuffer
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.type_aliases import MaybeCallback, RolloutReturn, TrainFreq
from stable_baselines3.common.vec_env import VecEnv

from sb3_complementary.common import density_ratio
from sb3_complementary.common.buffers import NEUTRAL_SCORE, ComplementaryReplayBuffer, WeightedSamples
from sb3_complementary.common.extractor import MIN_FAST_MEMORY, ExperienceExtractor, extractor_settings
from sb3_complementary.common.migration import check_contribution, check_old_knobs
from sb3_complementary.common.side_effects import preserved_rng
from sb3_complementary.common.validation import check_choice, check_range
from sb3_complementary.common.weighted_replay_mixin import WeightedReplayMixin

#: What scores the replay: the fast/slow density ratio (the extractor) times fresh ``|TD|``, or
#: fresh ``|TD|`` alone (``fresh_td``; ``laber`` with LaBER's unbiasing IS weights).
CONTRIBUTIONS = ("density_ratio", "fresh_td", "laber")
#: The fixed IS exponent of each kind's draws (``density_ratio``'s is ``extractor_kwargs["is_exponent"]``).
IS_EXPONENTS = {"fresh_td": 0.0, "laber": 1.0}
#: Percentiles of ``N * P(i)`` recorded as the weight range.
WEIGHT_PERCENTILES = (5, 95)
#: Transitions per forward pass when the whole buffer is re-scored.
RESCORE_CHUNK = 65536


class ComplementaryMixin(WeightedReplayMixin):
    """
    Replay run by a learned experience extractor that co-evolves with the policy.

    The extractor classifies the fast memory (the freshest transitions) against the whole buffer:
    its odds, the density ratio, say how much a transition looks like what the agent does now
    (:mod:`~sb3_complementary.common.extractor`). The model fits it every
    ``extractor_kwargs["train_freq"]`` env steps and re-scores the buffer with it every
    ``extractor_kwargs["refresh_interval"]`` env steps, at the end of a rollout (never inside the
    per-step loop); :meth:`fit_extractor` and :meth:`refresh_scores` are public. Each gradient
    step draws ``candidate_pool`` batches of uniform candidates, measures their ``|TD|`` with the
    current networks, and picks its batch from them: a ``uniform_fraction`` share uniformly, the
    rest by ``(ratio * max(|TD|, score_floor) + epsilon) ** alpha``. The extractor and its
    optimizer are saved with the model.

    Put first in the bases of an algorithm (``class ComplementaryX(ComplementaryMixin, WeightedX)``):
    its constructor takes every argument of the parent algorithm (positional ones included),
    plus these keyword knobs, the same for every algorithm:

    :param contribution: What scores the candidates: ``"density_ratio"`` (the extractor's ratio
        times fresh ``|TD|``, draws never undone by IS weights at ``is_exponent=0``), ``"fresh_td"``
        (fresh ``|TD|`` alone, floored at ``score_floor``, never undone: LaBER's selection with
        LAP's floor; no extractor is fitted) or ``"laber"`` (the same selection with LaBER's own IS
        weights ``mean(p) / p_i``). Both ``|TD|`` kinds need ``candidate_pool >= 1``.
    :param alpha: Priority exponent, >= 0 (0: uniform draws, the control). The buffer reads it at
        every draw; change it during training with :meth:`set_alpha`.
    :param epsilon: Added to the scores, >= 0.
    :param uniform_fraction: Share of each batch drawn uniformly, in [0, 1]: the guard against
        feedback loops.
    :param score_floor: Minimum score, >= 0 (also the fallback for non-finite scores).
    :param candidate_pool: ``k >= 1``: every gradient step draws ``k * batch_size`` uniform
        candidates, measures their ``|TD|`` now (forward passes of the value network and of the
        algorithm's own TD target, side-effect free) and selects the batch from them
        (``select_from_candidates`` of the buffer); the measurement is skipped at ``alpha=0``,
        where the selection is uniform whatever the scores. With HER the pool is relabelled
        before it is scored. 0: ``density_ratio`` draws from the sum tree by the scores of the
        last re-score.
    :param extractor_kwargs: The extractor's settings (network, schedule, fast memory, ratio
        temperature and cap, IS exponent): see
        :func:`~sb3_complementary.common.extractor.extractor_settings`.
    """

    extractor: ExperienceExtractor
    initial_score = "neutral"
    _complementary = True

    def __init__(
        self,
        *args: Any,
        contribution: str = "density_ratio",
        alpha: float = 1.0,
        epsilon: float = 1e-3,
        uniform_fraction: float = 0.25,
        score_floor: float = 0.01,
        candidate_pool: int = 4,
        extractor_kwargs: dict[str, Any] | None = None,
        _init_setup_model: bool = True,
        **kwargs: Any,
    ) -> None:
        check_old_knobs(type(self).__name__, kwargs, complementary=True)
        check_contribution(contribution)
        kwargs["_init_setup_model"] = False  # the knobs below must exist before _setup_model runs
        super().__init__(*args, **kwargs)
        check_choice("contribution", contribution, CONTRIBUTIONS)
        check_range("candidate_pool", candidate_pool, low=0)
        if int(candidate_pool) != candidate_pool:
            raise ValueError(f"candidate_pool must be a whole number of batches (0 = off), got {candidate_pool!r}")
        if contribution in IS_EXPONENTS and not candidate_pool:
            raise ValueError(
                f"contribution={contribution!r} measures |TD| on a candidate pool: set candidate_pool >= 1"
            )
        self.contribution = contribution
        self.candidate_pool = int(candidate_pool)
        self.extractor_kwargs = extractor_kwargs
        settings = extractor_settings(extractor_kwargs, self.buffer_size)  # checked once, here
        if contribution == "density_ratio" and settings["fast_memory"] > self.buffer_size // 2:
            warnings.warn(
                f"buffer_size={self.buffer_size} is below twice the smallest fast memory ({MIN_FAST_MEMORY}): "
                "the density-ratio classifier can never be fitted, so its weights stay 1 and only fresh |TD| "
                f"selects; use buffer_size >= {2 * MIN_FAST_MEMORY}",
                stacklevel=2,
            )
        self._init_replay_knobs(alpha, epsilon, uniform_fraction, score_floor)
        #: Held-out ROC AUC of the classifier at its last fit (NaN before the first).
        self.extractor_auc = float("nan")
        #: ``num_timesteps`` of the last fit and re-score: the extractor's schedule, saved with the model.
        self.last_fit_step = 0
        self.last_refresh_step = 0
        #: Replay rates ``P * q_i`` of the last 1,000 draw-time selections (with ``candidate_pool``).
        self._selection_rates: deque[np.ndarray] = deque(maxlen=1000)
        if _init_setup_model:
            self._setup_model()

    def _setup_model(self) -> None:
        self._migrate_saved()  # an old save's extractor settings move into extractor_kwargs
        self.extractor_settings = extractor_settings(self.extractor_kwargs, self.buffer_size)
        super()._setup_model()
        # Initialising the extractor draws from torch's RNG: on a fork, so that the policy's own draws
        # (a SAC actor sampling actions) stay where the uniform parent algorithm would have them.
        with preserved_rng(self.device):
            self.extractor = ExperienceExtractor(
                self.replay_buffer.ratio_input_dim,
                self.extractor_settings["net_arch"],
                learning_rate=self.extractor_settings["lr_ratio"] * self.lr_schedule(1.0),
                device=self.device,
            )
        self._configure_buffer(self.replay_buffer)
        if not hasattr(self, "_selection_rates"):  # a model saved without it
            self._selection_rates = deque(maxlen=1000)

    def _adopt_buffer(self, buffer: ComplementaryReplayBuffer) -> None:
        super()._adopt_buffer(buffer)
        self._configure_buffer(buffer)

    def _configure_buffer(self, buffer: ComplementaryReplayBuffer) -> None:
        """A new transition's score: the mean ratio (1) for the density ratio, the buffer's neutral one otherwise."""
        buffer.neutral_score = 1.0 if self.contribution == "density_ratio" else NEUTRAL_SCORE

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
        self.replay_buffer.record_use(batch.indices, td_abs)

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

    def _run_schedule(self) -> None:
        """Fit every ``train_freq`` env steps and re-score every ``refresh_interval`` env steps."""
        steps = self.num_timesteps
        if steps - self.last_fit_step >= self.extractor_settings["train_freq"]:
            self.last_fit_step = steps
            self.fit_extractor()
        if steps - self.last_refresh_step >= self.extractor_settings["refresh_interval"] and self.replay_buffer.size():
            self.last_refresh_step = steps
            self.refresh_scores()

    def _setup_learn(
        self,
        total_timesteps: int,
        callback: MaybeCallback = None,
        reset_num_timesteps: bool = True,
        tb_log_name: str = "run",
        progress_bar: bool = False,
    ) -> tuple[int, BaseCallback]:
        result = super()._setup_learn(total_timesteps, callback, reset_num_timesteps, tb_log_name, progress_bar)
        if self.last_fit_step > self.num_timesteps:  # learn(reset_num_timesteps=True): the clock restarted
            self.last_fit_step = self.last_refresh_step = self.num_timesteps
        return result

    def fit_extractor(self) -> float:
        """
        Take the extractor's gradient steps now: balanced BCE of the fast memory against the whole
        buffer, then its held-out ROC AUC (``extractor_auc``). It waits until the buffer holds
        twice the fast memory; ``fresh_td`` and ``laber`` fit nothing.

        :return: Mean loss of the fit (NaN when there was nothing to fit on yet).
        """
        settings, buffer = self.extractor_settings, self.replay_buffer
        if self.contribution != "density_ratio" or not density_ratio.fit_ready(buffer, settings["fast_memory"]):
            return float("nan")
        loss = density_ratio.fit_classifier(
            self.extractor,
            buffer,
            settings["fast_memory"],
            settings["gradient_steps"],
            settings["batch_size"],
            self.replay_rng,
        )
        self.extractor_auc = density_ratio.held_out_auc(
            self.extractor, buffer, settings["fast_memory"], self.replay_rng
        )
        self.logger.record("complementary/roc_auc", self.extractor_auc)
        self.logger.record("complementary/extractor_loss", loss)
        return loss

    def refresh_scores(self) -> None:
        """
        Re-score every stored transition with batched forward passes, rebuild the sum tree, and
        log the replay's health (:meth:`replay_diagnostics`, and the scores by age quartile).

        The scores are the tempered, self-normalised, capped ratio of
        :func:`~sb3_complementary.common.density_ratio.ratio_weights` (all 1 until the first fit).
        ``fresh_td`` and ``laber`` score at draw time: only the health is logged.
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
                weights = density_ratio.ratio_weights(logits, settings["temperature"], settings["cap"])
            buffer.set_all_scores(indices, weights)
        for name, value in self.replay_diagnostics().items():
            self.logger.record(f"complementary/{name}", value)
        rows, envs = np.divmod(indices, buffer.n_envs)
        ages = buffer.n_added - buffer.features.insert_step[rows, envs]
        quartile = np.minimum((np.argsort(np.argsort(ages)) * 4) // len(ages), 3)
        scores = buffer.scores[indices]
        for q in range(4):
            if np.any(quartile == q):
                # q1 = youngest quarter of the buffer, q4 = oldest.
                self.logger.record(f"complementary/score_age_q{q + 1}", float(scores[quartile == q].mean()))
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
        ``P * q_i`` over the candidates of the last 1,000 pools.
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
        }

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

    # ------------------------------------------------------------------ save / load
    def _excluded_save_params(self) -> list[str]:
        # The extractor travels as state dicts; its settings are rebuilt from extractor_kwargs.
        return [*super()._excluded_save_params(), "extractor", "extractor_settings", "_selection_rates"]

    def _get_torch_save_params(self) -> tuple[list[str], list[str]]:
        state_dicts, variables = super()._get_torch_save_params()
        return [*state_dicts, "extractor", "extractor.optimizer"], variables
