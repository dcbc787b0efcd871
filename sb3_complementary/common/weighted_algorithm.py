"""
The one base of every weighted algorithm: its replay knobs checked once, its buffer built, the draw
and the feedback of each gradient step, the experience extractor it owns, and save/load.

A ``weighted_*.py`` train step reads ``batch = self._draw_batch(batch_size)``, computes the
parent's loss per sample times ``batch.weights``, steps the optimizer, and calls
``self._replay_feedback(batch, current, target)``. What the draw does is the configuration's:

- ``alpha=0``: every priority is 1, so the draw is SB3's uniform one and the weights are 1: the
  update is the parent's, bit for bit. Nothing is scored, no tree is kept, no extractor is built.
- ``contribution="per"`` (the Prioritized classes): PER's draw from the sum tree by the last
  ``|TD|`` of each transition, which the feedback writes back.
- ``contribution="laber"`` / ``"fresh_td"``: a uniform pool of ``candidate_pool`` batches is scored
  by its ``|TD|`` measured now and one batch is selected from it; nothing is stored or fed back.
- ``contribution="density_ratio"``: the experience extractor's density ratio (re-scored over the
  whole buffer by :class:`~sb3_complementary.common.extractor.ExtractorTrainingCallback`) times
  the pool's fresh ``|TD|``, or, with ``candidate_pool=0``, the stored ratio alone from the tree.
"""

import io
import json
import pathlib
import pickle
import warnings
import zipfile
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import numpy as np
import torch as th
from gymnasium import spaces
from stable_baselines3.common.buffers import ReplayBuffer
from stable_baselines3.common.callbacks import BaseCallback, CallbackList, ConvertCallback
from stable_baselines3.common.off_policy_algorithm import OffPolicyAlgorithm
from stable_baselines3.common.save_util import load_from_pkl, save_to_pkl
from stable_baselines3.common.type_aliases import MaybeCallback
from stable_baselines3.her import HerReplayBuffer
from torch import nn

from sb3_complementary.common.buffers import (
    NEUTRAL_SCORE,
    ComplementaryDictReplayBuffer,
    ComplementaryNStepReplayBuffer,
    ComplementaryReplayBuffer,
    Samples,
    WeightedSamples,
)
from sb3_complementary.common.extractor import (
    ExperienceExtractor,
    ExtractorTrainingCallback,
    fit_classifier,
    fit_ready,
    held_out_auc,
    ratio_weights,
)
from sb3_complementary.common.extractor_settings import MIN_FAST_MEMORY, extractor_settings
from sb3_complementary.common.her_replay_buffer import ComplementaryHerReplayBuffer, PrioritizedHerReplayBuffer
from sb3_complementary.common.persistence import atomic_write, check_save_file
from sb3_complementary.common.validation import check_choice, check_range, check_replay_knobs

__all__ = ["WeightedAlgorithm", "preserved_rng", "side_effect_free"]

#: The save format: a zip without it was written before the format existed (0.1.x) and is refused.
REPLAY_FORMAT = 2
#: Knobs the model hands to its buffer; ``replay_buffer_kwargs`` must not set them a second time.
BUFFER_KNOBS = ("alpha", "beta", "epsilon", "uniform_fraction", "score_floor", "initial_score")
#: What scores a Complementary class's draws: fresh ``|TD|`` on a pool (``laber`` with LaBER's unbiasing
#: IS weights), or the extractor's density ratio (times fresh ``|TD|`` on a pool). The Prioritized
#: classes' draws are ``"per"``: PER's stored ``|TD|``.
CONTRIBUTIONS = ("laber", "fresh_td", "density_ratio")
#: The fixed IS exponent of the pool kinds' draws (``per`` anneals ``beta``; ``density_ratio``'s is
#: ``extractor_kwargs["is_exponent"]``).
IS_EXPONENTS = {"fresh_td": 0.0, "laber": 1.0}
#: ``actor_batch`` values: the critic's batch (SB3's update), or a second, uniform batch.
ACTOR_BATCHES = ("shared", "uniform")
#: Percentiles of ``N * P(i)`` recorded as the weight range.
WEIGHT_PERCENTILES = (5, 95)
#: Transitions per forward pass when the whole buffer is re-scored.
RESCORE_CHUNK = 65536

_SelfWeighted = TypeVar("_SelfWeighted", bound="WeightedAlgorithm")


@contextmanager
def preserved_rng(device: th.device | str) -> Iterator[None]:
    """
    Run the block on a fork of torch's global RNG (CPU, plus ``device`` if it is an accelerator).

    Random draws inside it (a SAC actor sampling next actions for a candidate pool, a network
    being initialised) do not shift the stream that training draws from afterwards.

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


class WeightedAlgorithm(OffPolicyAlgorithm):
    """
    An SB3 off-policy algorithm that replays through a
    :class:`~sb3_complementary.common.buffers.ComplementaryReplayBuffer` and weights its critic loss.

    Not built directly: ``WeightedDQN``, ``WeightedSAC``, ... put it before their SB3 parent, and
    each public class's constructor takes its parent's arguments, then calls :meth:`_init_replay`
    with its knobs before ``_setup_model``. A configuration builds only what its draws read: the
    extractor exists only for ``contribution="density_ratio"`` with ``alpha > 0``, the sum tree
    only once a tree draw reads it, and ``|TD|`` is measured only where it selects or is stored.
    """

    replay_buffer: ComplementaryReplayBuffer
    #: The experience extractor (``contribution="density_ratio"`` with ``alpha > 0``), else None.
    extractor: ExperienceExtractor | None

    # ------------------------------------------------------------------ construction
    def _init_replay(
        self,
        contribution: str,
        alpha: float,
        epsilon: float,
        uniform_fraction: float,
        score_floor: float,
        candidate_pool: int = 0,
        beta: float | None = None,
        extractor_kwargs: dict[str, Any] | None = None,
        actor_batch: str = "shared",
    ) -> None:
        """
        Check the replay knobs once and store them (the buffer is built from the model's).

        :param contribution: What scores the draws: ``"per"`` (the Prioritized classes, with ``beta``),
            or one of :data:`CONTRIBUTIONS` (the Complementary classes, without).
        :param alpha: Priority exponent, >= 0 (0: uniform draws, SB3's).
        :param epsilon: Added to the scores, >= 0.
        :param uniform_fraction: Share of each batch drawn uniformly, in [0, 1].
        :param score_floor: Minimum score, >= 0.
        :param candidate_pool: Batches of uniform candidates scored at each draw (0: no pool).
        :param beta: PER's initial IS exponent, annealed to 1 over ``learn()`` (``per`` only, and required).
        :param extractor_kwargs: The extractor's settings (:func:`.extractor_settings.extractor_settings`).
        :param actor_batch: Which batch an actor-critic's actor learns from: ``"shared"`` or ``"uniform"``.
        """
        check_choice("contribution", contribution, ("per",) if beta is not None else CONTRIBUTIONS)
        if isinstance(alpha, str):
            raise ValueError(f"alpha must be a number >= 0, got {alpha!r}")
        check_replay_knobs(alpha, epsilon, uniform_fraction, score_floor, beta=beta)
        check_range("candidate_pool", candidate_pool, low=0)
        if int(candidate_pool) != candidate_pool:
            raise ValueError(f"candidate_pool must be a whole number of batches (0 = off), got {candidate_pool!r}")
        if contribution in IS_EXPONENTS and not candidate_pool:
            raise ValueError(
                f"contribution={contribution!r} measures |TD| on a candidate pool: set candidate_pool >= 1"
            )
        check_choice("actor_batch", actor_batch, ACTOR_BATCHES)
        doubled = sorted(set(BUFFER_KNOBS) & set(self.replay_buffer_kwargs or {}))
        if doubled:
            raise ValueError(
                f"replay_buffer_kwargs sets {doubled}: {type(self).__name__} sets these on its buffer itself "
                f"(pass the ones its constructor takes to the constructor, once)"
            )
        self.contribution = contribution
        self.alpha = float(alpha)
        self.beta = beta
        self.epsilon = epsilon
        self.uniform_fraction = uniform_fraction
        self.score_floor = score_floor
        self.candidate_pool = int(candidate_pool)
        self.extractor_kwargs = extractor_kwargs
        self.actor_batch = actor_batch
        self.replay_format = REPLAY_FORMAT
        settings = extractor_settings(extractor_kwargs, self.buffer_size)  # checked once, here
        if self._needs_extractor() and settings["fast_memory"] > self.buffer_size // 2:
            warnings.warn(
                f"buffer_size={self.buffer_size} is below twice the smallest fast memory ({MIN_FAST_MEMORY}): "
                "the density-ratio classifier can never be fitted, so its weights stay 1 and only fresh |TD| "
                f"selects; use buffer_size >= {2 * MIN_FAST_MEMORY}",
                stacklevel=3,
            )

    def _needs_extractor(self) -> bool:
        """Whether the draws read the extractor's ratio: ``density_ratio`` with ``alpha > 0``."""
        return self.contribution == "density_ratio" and self.alpha > 0

    def _setup_model(self) -> None:
        self.extractor_settings = extractor_settings(self.extractor_kwargs, self.buffer_size)
        if self.replay_buffer_class is HerReplayBuffer:  # SB3's HER, weighted as this algorithm weighs
            self.replay_buffer_class = (
                PrioritizedHerReplayBuffer if self.contribution == "per" else ComplementaryHerReplayBuffer
            )
        if self.replay_buffer_class is None:
            if isinstance(self.observation_space, spaces.Dict):
                self.replay_buffer_class = ComplementaryDictReplayBuffer
            elif self.n_steps > 1:
                self.replay_buffer_class = ComplementaryNStepReplayBuffer
            else:
                self.replay_buffer_class = ComplementaryReplayBuffer
        elif not issubclass(self.replay_buffer_class, ComplementaryReplayBuffer):
            raise ValueError(
                f"{type(self).__name__} replays through a ComplementaryReplayBuffer (or a subclass), "
                f"got replay_buffer_class={self.replay_buffer_class.__name__}"
            )
        if self.replay_buffer is None:
            self.replay_buffer = self._make_buffer()  # SB3's _setup_model keeps a buffer that exists
        with warnings.catch_warnings():
            # SB3 warns that n_steps is ignored with a custom buffer class: ours was built with it above.
            warnings.filterwarnings("ignore", message=r"`n_steps=\d+` is ignored")
            super()._setup_model()
        self.extractor = None
        if self._needs_extractor():
            self._setup_extractor()
        self._configure_buffer(self.replay_buffer)
        #: Replay rates ``P * q_i`` of the last 1,000 draw-time selections (with ``candidate_pool``).
        self._selection_rates: deque[np.ndarray] = deque(maxlen=1000)
        self._is_weight_stats: list[np.ndarray] = []

    def _setup_extractor(self) -> None:
        """Build the extractor, its generators and its schedule's state (a loaded model keeps its own)."""
        # Initialising the extractor draws from torch's RNG: on a fork, so that the policy's own draws
        # (a SAC actor sampling actions) stay where they would be without it.
        with preserved_rng(self.device):
            self.extractor = ExperienceExtractor(
                self.replay_buffer.ratio_input_dim,
                self.extractor_settings["net_arch"],
                learning_rate=self.extractor_settings["lr_ratio"] * self.lr_schedule(1.0),
                device=self.device,
            )
        # The classifier's mini-batches draw from replay_rng; the held-out AUC, a query, from its own
        # generator, so that asking for it never shifts the fit's draws.
        self.replay_rng: np.random.Generator = self.__dict__.get("replay_rng") or np.random.default_rng(self.seed)
        self.auc_rng: np.random.Generator = self.__dict__.get("auc_rng") or np.random.default_rng(
            np.random.SeedSequence(self.seed, spawn_key=(1,))
        )
        #: Held-out ROC AUC of the classifier at its last fit (NaN before the first).
        self.extractor_auc: float = self.__dict__.get("extractor_auc", float("nan"))
        #: ``num_timesteps`` of the last fit and re-score: the schedule's state, saved with the model.
        self.last_fit_step: int = self.__dict__.get("last_fit_step", 0)
        self.last_refresh_step: int = self.__dict__.get("last_refresh_step", 0)

    def _buffer_knobs(self) -> dict[str, Any]:
        """The replay knobs as the buffer takes them (the model's values win over any saved in the buffer)."""
        return {
            "alpha": self.alpha,
            "beta": self._is_exponent(),
            "epsilon": self.epsilon,
            "uniform_fraction": self.uniform_fraction,
            "score_floor": self.score_floor,
            "initial_score": "max" if self.contribution == "per" else "neutral",
        }

    def _make_buffer(self) -> ComplementaryReplayBuffer:
        """The buffer SB3's ``_setup_model`` would build, with the replay knobs (and n-step returns) added."""
        assert self.replay_buffer_class is not None
        kwargs = dict(self.replay_buffer_kwargs)
        her = issubclass(self.replay_buffer_class, HerReplayBuffer)
        if self.n_steps > 1:  # a HER buffer refuses n_steps itself: it replays 1-step transitions
            kwargs = {"n_steps": self.n_steps, **({} if her else {"gamma": self.gamma}), **kwargs}
        if her:
            assert self.env is not None, "You must pass an environment when using `HerReplayBuffer`"
            kwargs["env"] = self.env
        buffer = self.replay_buffer_class(
            self.buffer_size,
            self.observation_space,
            self.action_space,
            device=self.device,
            n_envs=self.n_envs,
            optimize_memory_usage=self.optimize_memory_usage,
            **kwargs,
            **self._buffer_knobs(),
        )
        assert isinstance(buffer, ComplementaryReplayBuffer)
        return buffer

    def _configure_buffer(self, buffer: ComplementaryReplayBuffer) -> None:
        """A new transition's score: the mean ratio (1) for the density ratio, the buffer's neutral one otherwise."""
        buffer.neutral_score = 1.0 if self.contribution == "density_ratio" else NEUTRAL_SCORE

    # ------------------------------------------------------------------ learn
    def learn(
        self: _SelfWeighted,
        total_timesteps: int,
        callback: MaybeCallback = None,
        log_interval: int = 4,
        tb_log_name: str | None = None,
        reset_num_timesteps: bool = True,
        progress_bar: bool = False,
    ) -> _SelfWeighted:
        """
        SB3's ``learn``. ``tb_log_name`` defaults to the class name (``"ComplementaryDQN"``), so
        TensorBoard runs do not collide with the parent algorithm's (``"DQN"``). With an extractor,
        an :class:`~sb3_complementary.common.extractor.ExtractorTrainingCallback` with the
        schedule of ``extractor_kwargs`` joins the user's callbacks, unless they hold one.
        """
        return super().learn(
            total_timesteps=total_timesteps,
            callback=callback,
            log_interval=log_interval,
            tb_log_name=type(self).__name__ if tb_log_name is None else tb_log_name,
            reset_num_timesteps=reset_num_timesteps,
            progress_bar=progress_bar,
        )

    def _init_callback(self, callback: MaybeCallback, progress_bar: bool = False) -> BaseCallback:
        if self.extractor is not None:
            callbacks: list[BaseCallback]
            if callback is None:
                callbacks = []
            elif isinstance(callback, list):
                callbacks = list(callback)
            elif isinstance(callback, CallbackList):
                callbacks = list(callback.callbacks)
            elif isinstance(callback, BaseCallback):
                callbacks = [callback]
            else:  # a function, as SB3 converts it
                callbacks = [ConvertCallback(callback)]
            if not any(isinstance(c, ExtractorTrainingCallback) for c in callbacks):
                callbacks.append(ExtractorTrainingCallback())
            callback = callbacks
        return super()._init_callback(callback, progress_bar)

    def _setup_learn(
        self,
        total_timesteps: int,
        callback: MaybeCallback = None,
        reset_num_timesteps: bool = True,
        tb_log_name: str = "run",
        progress_bar: bool = False,
    ) -> tuple[int, BaseCallback]:
        result = super()._setup_learn(total_timesteps, callback, reset_num_timesteps, tb_log_name, progress_bar)
        if self.extractor is not None and self.last_fit_step > self.num_timesteps:  # the clock restarted
            self.last_fit_step = self.last_refresh_step = self.num_timesteps
        return result

    def set_alpha(self, alpha: float) -> None:
        """
        Set the selection strength: the priority exponent ``alpha`` of the draws, >= 0 (0: uniform).

        The buffer reads ``alpha`` at every draw, so the change takes effect at the next gradient
        step; the sum tree's priorities, if there is a tree, are rebuilt from the stored scores,
        and a density-ratio model that leaves ``alpha=0`` builds its extractor. It is the one way to
        change ``alpha`` during training (a schedule between windows of ``learn()``).
        """
        check_range("alpha", alpha, low=0.0)
        self.alpha = float(alpha)
        if self.replay_buffer is not None and self.replay_buffer.alpha != self.alpha:
            self.replay_buffer.alpha = self.alpha
            self.replay_buffer.rebuild_priorities()
        if self._needs_extractor() and self.extractor is None:
            self._setup_extractor()

    # ------------------------------------------------------------------ the train step's draw and feedback
    def _is_exponent(self) -> float:
        """The IS exponent of the draws now: PER's ``beta`` annealed linearly to 1, or the kind's fixed one."""
        if self.contribution == "per":
            assert self.beta is not None
            progress = 1.0 - self._current_progress_remaining
            return self.beta + (1.0 - self.beta) * progress
        if self.contribution == "density_ratio":
            return float(self.extractor_settings["is_exponent"])  # the ratio's shift is the point
        return IS_EXPONENTS[self.contribution]

    def _begin_weighted_train(self) -> None:
        """Start a ``train()`` call: set the buffer's IS exponent."""
        self.replay_buffer.beta = self._is_exponent()

    def _draw_batch(self, batch_size: int) -> WeightedSamples:
        """One gradient step's batch with its IS weights, as the configuration draws it (the module docstring)."""
        buffer = self.replay_buffer
        if self.alpha == 0:  # every priority is 1: SB3's uniform draw
            return buffer.sample_uniform(batch_size, env=self._vec_normalize_env)
        if not self.candidate_pool:  # PER, or the density ratio's stored scores
            return buffer.sample_weighted(batch_size, env=self._vec_normalize_env)
        # With HER the pool holds relabelled candidates, each scored on its own goal's |TD|.
        candidates = buffer.uniform_indices(self.candidate_pool * batch_size)
        samples, candidates = buffer.gather_pool(candidates, env=self._vec_normalize_env)
        td_abs = self._current_td_abs(samples)
        if self.contribution == "density_ratio":  # "looks like the current agent's data" times "is still wrong"
            scores = buffer.scores[candidates] * np.maximum(td_abs, buffer.score_floor)
        else:
            scores = td_abs
        batch, rates = buffer.select_from_candidates(
            candidates, samples, scores, batch_size, max_normalized=self.contribution != "laber"
        )
        self._selection_rates.append(rates)
        return batch

    def _replay_feedback(self, batch: WeightedSamples, current: th.Tensor, target: th.Tensor) -> None:
        """
        Feed one gradient step back to the replay: its IS weights to the log and, for PER, its
        ``|TD|`` to the stored scores. Uniform draws feed nothing back.

        :param batch: The step's batch, from :meth:`_draw_batch`.
        :param current: The estimate the TD error is taken of (:meth:`_current_values`'s shape), as trained.
        :param target: The step's TD target (:meth:`_td_target`'s shape).
        """
        if self.alpha == 0:
            return
        self._is_weight_stats.append(batch.raw_weights)
        if self.contribution == "per":
            td_abs = self._td_abs(current.detach(), target).cpu().numpy().reshape(-1)
            self.replay_buffer.update_scores(batch.indices, td_abs)

    def _current_td_abs(self, data: Samples) -> np.ndarray:
        """
        ``(n,)`` each sample's ``|TD|`` at the current parameters, measured without side effects
        (for draw-time selection): no graph, eval mode, torch's RNG stream untouched. A target that
        draws (SAC's next actions, TD3's smoothing noise) draws on a fork of the stream.
        """
        with side_effect_free(self.policy, self.device):
            target = self._td_target(data)
            return self._td_abs(self._current_values(data), target).cpu().numpy().reshape(-1)

    def _td_target(self, data: Samples) -> th.Tensor:
        """The algorithm's TD target for a batch (each ``weighted_*.py`` states its own)."""
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

    def _actor_samples(self, critic_samples: Samples, batch_size: int) -> Samples:
        """
        The batch an actor-critic's actor loss (and SAC's entropy-coefficient loss) is taken on.

        With ``actor_batch="shared"`` (the default) it is the critic's batch: SB3's update. With
        ``"uniform"`` it is a second batch of the same size drawn uniformly (SB3's ``sample``), and
        only the critic learns from the selection: an actor trained on high-``|TD|`` transitions
        follows a wrong policy gradient (LA3P, Saglam et al., JAIR 2023).

        :param critic_samples: The critic's batch of this gradient step.
        :param batch_size: Its size.
        """
        if self.actor_batch == "shared":
            return critic_samples
        return self.replay_buffer.sample(batch_size, env=self._vec_normalize_env)

    def _log_weights(self) -> None:
        if self._is_weight_stats:
            weights = np.concatenate(self._is_weight_stats)
            self.logger.record("complementary/is_weight_mean", float(weights.mean()))
            self.logger.record("complementary/is_weight_max", float(weights.max()))
            self.logger.record("complementary/beta", self.replay_buffer.beta)
            self._is_weight_stats = []

    # ------------------------------------------------------------------ the extractor
    def fit_extractor(self) -> float:
        """
        Take the extractor's gradient steps now: balanced BCE of the fast memory against the whole
        buffer, then its held-out ROC AUC (``extractor_auc``). It waits until the buffer holds
        twice the fast memory. Records ``last_fit_step``.

        :return: Mean loss of the fit (NaN when there was nothing to fit on yet).
        :raises ValueError: If this configuration has no extractor.
        """
        extractor = self._require_extractor("fit_extractor")
        self.last_fit_step = self.num_timesteps
        settings, buffer = self.extractor_settings, self.replay_buffer
        if not fit_ready(buffer, settings["fast_memory"]):
            return float("nan")
        loss = fit_classifier(
            extractor,
            buffer,
            settings["fast_memory"],
            settings["gradient_steps"],
            settings["batch_size"],
            self.replay_rng,
        )
        self.extractor_auc = held_out_auc(extractor, buffer, settings["fast_memory"], self.auc_rng)
        self.logger.record("complementary/roc_auc", self.extractor_auc)
        self.logger.record("complementary/extractor_loss", loss)
        return loss

    def refresh_scores(self) -> None:
        """
        Re-score every stored transition with the extractor's ratio in batched forward passes
        (the tempered, self-normalised, capped ratio of
        :func:`~sb3_complementary.common.extractor.ratio_weights`; all 1 until the first fit),
        then log the replay's health (:meth:`replay_diagnostics`, the scores by age quartile and,
        in a multi-task run, each task's share of the draws). Records ``last_refresh_step``.

        :raises ValueError: If this configuration has no extractor.
        """
        extractor = self._require_extractor("refresh_scores")
        self.last_refresh_step = self.num_timesteps
        buffer = self.replay_buffer
        indices = buffer.valid_indices()
        if not len(indices):
            return
        if np.isnan(self.extractor_auc):  # not fitted yet: every transition counts the same
            weights = np.ones(len(indices), dtype=np.float32)
        else:
            chunks = [indices[start : start + RESCORE_CHUNK] for start in range(0, len(indices), RESCORE_CHUNK)]
            logits = np.concatenate([extractor.numpy_logits(buffer.ratio_inputs(c)) for c in chunks])
            weights = ratio_weights(logits, self.extractor_settings["temperature"], self.extractor_settings["cap"])
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
        if task_ids.min() != task_ids.max():  # a multi-task run
            for task, (sample_share, data_share) in buffer.task_shares(indices).items():
                self.logger.record(f"complementary/task_{task}_sample_share", sample_share)
                self.logger.record(f"complementary/task_{task}_data_share", data_share)

    def _require_extractor(self, method: str) -> ExperienceExtractor:
        if self.extractor is None:
            raise ValueError(
                f"{type(self).__name__}.{method}(): this model has no extractor (contribution="
                f"{self.contribution!r}, alpha={self.alpha}); only contribution='density_ratio' with alpha > 0 "
                "builds one"
            )
        return self.extractor

    # ------------------------------------------------------------------ diagnostics (queries)
    def sampling_ess_fraction(self) -> float:
        """
        ESS fraction of the sampling distribution (1 = uniform). With draw-time selection, the
        mean over the last 1,000 draws of the selection's ESS within its candidate pool.
        """
        if self.alpha == 0:
            return 1.0
        if not self.candidate_pool:
            return self.replay_buffer.ess_fraction()
        if not self._selection_rates:
            return 1.0
        return float(np.mean([1.0 / np.mean(rates**2) for rates in self._selection_rates]))

    def replay_diagnostics(self) -> dict[str, float]:
        """
        What the replay does now, as a query (nothing is written): the ESS fraction of the replay
        distribution (1 = uniform), the range of ``N * P(i)`` over the buffer (``weight_p5``,
        ``weight_p95``, ``weight_max``; 1 everywhere for uniform replay) and, with an extractor,
        the classifier's held-out ROC AUC (``roc_auc``, NaN before the first fit). With draw-time
        selection (``candidate_pool``) the draws are decided in the pool, so the range is that of
        the rates ``P * q_i`` over the candidates of the last 1,000 pools.
        """
        if self.alpha == 0:
            weights = np.ones(0)
        elif self.candidate_pool:
            weights = np.concatenate(self._selection_rates) if self._selection_rates else np.ones(0)
        else:
            weights = self.replay_buffer.replay_weights()
        p5, p95 = np.percentile(weights, WEIGHT_PERCENTILES) if weights.size else (1.0, 1.0)
        diagnostics = {
            "ess_fraction": self.sampling_ess_fraction(),
            "weight_p5": float(p5),
            "weight_p95": float(p95),
            "weight_max": float(weights.max()) if weights.size else 1.0,
        }
        if self.extractor is not None:
            diagnostics["roc_auc"] = self.extractor_auc
        return diagnostics

    # ------------------------------------------------------------------ save / load
    def _excluded_save_params(self) -> list[str]:
        # The extractor travels as state dicts; its settings are rebuilt from extractor_kwargs.
        return [
            *super()._excluded_save_params(),
            "extractor",
            "extractor_settings",
            "_selection_rates",
            "_is_weight_stats",
        ]

    def _get_torch_save_params(self) -> tuple[list[str], list[str]]:
        state_dicts, variables = super()._get_torch_save_params()
        if self.extractor is not None:
            state_dicts = [*state_dicts, "extractor", "extractor.optimizer"]
        return state_dicts, variables

    @classmethod
    def load(cls, path: str | pathlib.Path | io.BufferedIOBase, *args: Any, **kwargs: Any) -> Any:
        """
        SB3's ``load``, after checking that ``path`` is a whole save file of this format: a
        truncated or corrupted file, or a zip saved by sb3-complementary 0.1.x (before the save
        format existed), raises a ``ValueError`` naming the file, what is wrong and the way out.
        """
        if not isinstance(path, io.IOBase):
            target = check_save_file(path)
            if target is not None:
                _check_format(target)
        return super().load(path, *args, **kwargs)

    def save(self, path: str | pathlib.Path | io.BufferedIOBase, *args: Any, **kwargs: Any) -> None:
        """SB3 ``save``, written to a temporary file then renamed, so a crash never leaves a half-written zip."""
        if isinstance(path, io.BufferedIOBase):
            super().save(path, *args, **kwargs)
            return
        target = pathlib.Path(path)
        if target.suffix == "":
            target = pathlib.Path(f"{target}.zip")  # as SB3 does: only a missing suffix is added
        parent_save = super().save
        atomic_write(target, lambda file: parent_save(file, *args, **kwargs))

    def save_replay_buffer(self, path: str | pathlib.Path | io.BufferedIOBase) -> None:
        """Pickle the buffer (data and scores) atomically."""
        if isinstance(path, io.BufferedIOBase):
            save_to_pkl(path, self.replay_buffer, self.verbose)
            return
        target = pathlib.Path(path)
        if target.suffix == "":
            target = pathlib.Path(f"{target}.pkl")
        atomic_write(target, lambda file: save_to_pkl(file, self.replay_buffer, self.verbose))

    def load_replay_buffer(self, path: str | pathlib.Path | io.BufferedIOBase, truncate_last_traj: bool = True) -> None:
        """
        Load a pickled buffer. A plain SB3 buffer (saved without scores) is copied into a
        :class:`~sb3_complementary.common.buffers.ComplementaryReplayBuffer` with initial
        scores, with a warning; a weighted one takes this model's replay knobs.
        """
        try:
            loaded = load_from_pkl(path, self.verbose)
        except ModuleNotFoundError as exc:
            if not (exc.name or "").startswith("sb3_complementary."):
                raise
            raise ValueError(
                f"{path} holds a replay buffer pickled with {exc.name}, a module of sb3-complementary 0.1.x that "
                "this version does not have: collect a new buffer"
            ) from exc
        except (pickle.UnpicklingError, EOFError, ValueError) as exc:
            raise ValueError(
                f"Cannot load a replay buffer from {path}: the file is truncated or corrupted "
                f"({type(exc).__name__}: {exc})"
            ) from exc
        if not isinstance(loaded, ReplayBuffer):
            raise ValueError(f"{path} does not hold an SB3 ReplayBuffer (got {type(loaded).__name__})")
        if isinstance(loaded, HerReplayBuffer) != issubclass(self.replay_buffer_class or ReplayBuffer, HerReplayBuffer):
            raise ValueError(
                f"{path} holds a {type(loaded).__name__}, and {type(self).__name__} replays through "
                f"{getattr(self.replay_buffer_class, '__name__', None)}: a HER buffer and a plain one cannot stand in "
                "for each other (HER keeps episode boundaries that a plain buffer does not have)"
            )
        if isinstance(loaded, HerReplayBuffer):
            if not isinstance(loaded, ComplementaryHerReplayBuffer):
                raise ValueError(
                    f"{path} holds SB3's HerReplayBuffer, without scores; {type(self).__name__} "
                    "cannot convert it (its episode bookkeeping would need rebuilding): collect a new buffer"
                )
            if self.env is None:
                raise ValueError(
                    f"Cannot load the HER replay buffer {path} into a model without an env: HER computes the "
                    "rewards of relabelled goals with it. Call model.set_env(env) first, or pass env to load()."
                )
            loaded.set_env(self.env)
        if not isinstance(loaded, ComplementaryReplayBuffer):
            warnings.warn(
                f"Replay buffer {path} has no complementary scores ({type(loaded).__name__}); "
                "copying it: terminal flags are rebuilt from dones/timeouts and every transition gets the "
                "initial score.",
                stacklevel=2,
            )
            loaded = self._copy_plain_buffer(loaded)
        loaded.device = self.device
        self._adopt_buffer(loaded)
        self.replay_buffer = loaded
        if isinstance(loaded, HerReplayBuffer) and truncate_last_traj:
            loaded.truncate_last_trajectory()  # as SB3: the episode running at save time ends here

    def _adopt_buffer(self, buffer: ComplementaryReplayBuffer) -> None:
        """
        Bring a loaded buffer up to this model: the model's replay knobs win over the ones pickled
        with the buffer (``load(..., alpha=0.1)`` then ``load_replay_buffer`` replays at 0.1), and
        the tree's priorities are rebuilt from the stored scores when the priority map changed.
        """
        # beta is the buffer's live value: train() sets it from the model's schedule.
        knobs = {k: v for k, v in self._buffer_knobs().items() if k != "beta"}
        changed = [k for k, v in knobs.items() if getattr(buffer, k, None) != v]
        for knob in changed:
            setattr(buffer, knob, knobs[knob])
        if {"alpha", "epsilon", "score_floor"} & set(changed):
            buffer.rebuild_priorities()
        self._configure_buffer(buffer)

    def _copy_plain_buffer(self, old: ReplayBuffer) -> ComplementaryReplayBuffer:
        """A weighted buffer holding a plain SB3 buffer's transitions (:meth:`.ComplementaryReplayBuffer.load_rows`)."""
        assert self.replay_buffer_class is not None
        kwargs = {
            **self.replay_buffer_kwargs,
            **self._buffer_knobs(),
            "device": self.device,
            "n_envs": old.n_envs,
            "optimize_memory_usage": old.optimize_memory_usage,
            "handle_timeout_termination": getattr(old, "handle_timeout_termination", True),
        }
        new = self.replay_buffer_class(
            old.buffer_size * old.n_envs, self.observation_space, self.action_space, **kwargs
        )
        assert isinstance(new, ComplementaryReplayBuffer)
        new.load_rows(old)
        return new


def _check_format(target: pathlib.Path) -> None:
    """Raise a ``ValueError`` for a save without ``replay_format`` (sb3-complementary 0.1.x) or of a newer format."""
    with zipfile.ZipFile(target) as archive:
        data = json.loads(archive.read("data"))
    saved = data.get("replay_format")
    if saved is None:
        raise ValueError(
            f"{target} was saved by sb3-complementary 0.1.x, before its save format {REPLAY_FORMAT}: this version "
            "cannot load it. Load it with sb3-complementary 0.1.x and keep its policy with export_to_sb3() "
            "(a plain SB3 model loads anywhere), or train it again."
        )
    if saved > REPLAY_FORMAT:
        raise ValueError(
            f"{target} has save format {saved}, newer than this version's ({REPLAY_FORMAT}): upgrade sb3-complementary"
        )
