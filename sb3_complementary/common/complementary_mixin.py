"""The experience extractor's side of a Complementary algorithm: setup, fit, re-score, feedback, persistence."""

import warnings
from collections import deque
from typing import Any

import numpy as np
import torch as th
from stable_baselines3.common.callbacks import BaseCallback, CallbackList, ConvertCallback
from stable_baselines3.common.type_aliases import MaybeCallback

from sb3_complementary.common.buffers import ComplementaryReplayBuffer, WeightedSamples
from sb3_complementary.common.callbacks import ExtractorTrainingCallback
from sb3_complementary.common.contribution import SIGNALS, ContributionSignal, make_signal
from sb3_complementary.common.density_ratio import MIN_FAST_MEMORY
from sb3_complementary.common.extractor import ExperienceExtractor
from sb3_complementary.common.importance import IMPORTANCES, ReplayImportance, importance_for
from sb3_complementary.common.label_store import LabelStore
from sb3_complementary.common.side_effects import preserved_rng
from sb3_complementary.common.tasks import TASK_FEATURE_COLUMN
from sb3_complementary.common.validation import check_choice, check_range
from sb3_complementary.common.weighted_replay_mixin import WeightedReplayMixin

#: What scores the replay (common/importance.py): the fast/slow density ratio, one of the label
#: signals the extractor regresses, or ``"fresh_td"`` (no extractor: |TD| measured at draw time).
CONTRIBUTIONS = tuple(IMPORTANCES)
#: How the replay weights enter the update: as draw probabilities, or as loss weights on uniform draws.
WEIGHTINGS = ("sampling", "loss")
#: The fast memory of a buffer of 10,000 transitions or more, the size the study measured.
DEFAULT_FAST_MEMORY = 2000
#: A smaller buffer's fast memory is ``buffer_size // FAST_MEMORY_DIVISOR``, the study's 2000 of 10,000.
FAST_MEMORY_DIVISOR = 5
#: Percentiles of ``N * P(i)`` recorded as the weight range.
WEIGHT_PERCENTILES = (5, 95)


class ComplementaryMixin(WeightedReplayMixin):
    """
    Replay run by a learned experience extractor that co-evolves with the policy.

    By default the extractor is a classifier of the fast memory (the freshest transitions)
    against the whole buffer: its odds, the density ratio, say how much a transition looks like
    what the agent does now. Each gradient step draws ``candidate_pool`` batches of uniform
    candidates, measures their ``|TD|`` with the current networks, and picks its batch from them,
    a ``uniform_fraction`` share uniformly and the rest by ratio times fresh ``|TD|``; the ratio's
    shift is not undone by IS weights (``ratio_is_exponent=0``). The label signals (``"td"``,
    ``"influence"``, ``"outcome"``) instead label each trained batch into the label store, and the
    extractor regresses those labels. Either way the :class:`ExtractorTrainingCallback` only
    schedules ``fit_extractor()`` and ``refresh_scores()``. The extractor and its optimizer are
    saved with the model.

    Put first in the bases of an algorithm (``class ComplementaryX(ComplementaryMixin, WeightedX)``):
    its constructor takes every argument of the parent algorithm (positional ones included),
    plus these keyword knobs, the same for every algorithm:

    :param contribution: What the extractor learns: ``"td"`` (the transition's ``|TD|`` rank in its
        batch: learned PER), ``"influence"`` (does a gradient step on the transition lower the TD
        loss on fresh experience, more than the uniform control group's transitions do) or
        ``"outcome"`` (did training-episode returns improve after it was replayed);
        ``"density_ratio"`` (a classifier of the fast memory against the whole buffer: how much a
        transition looks like what the agent does now; see ``docs/design.md``); or ``"fresh_td"``
        (no extractor: with ``candidate_pool``, the candidates' ``|TD|`` measured at draw time, floored
        at ``score_floor`` and never undone by IS weights, as LaBER's selection with LAP's floor), or
        ``"laber"`` (the same selection with LaBER's own IS weights ``mean(p) / p_i``, a contender).
        ``"density_ratio"`` with the pool is the default: it is the configuration the 10-seed
        study measured (docs/benchmarks/history.md); ``"fresh_td"`` with the same pool was level
        with it at 5 seeds, at a few percent less CPU time.
    :param alpha: Priority exponent on the scores, ``P ∝ (score + epsilon) ** alpha``, >= 0.
    :param beta: Initial IS exponent in [0, 1], annealed to 1 over ``learn()``, for the label signals
        (the density ratio's is ``ratio_is_exponent``, fixed; ``"fresh_td"``'s is 0).
    :param epsilon: Added to the scores, >= 0.
    :param uniform_fraction: Share of each batch drawn uniformly, in [0, 1]: the guard against
        feedback loops and the control group of the influence signal.
    :param score_floor: Minimum score, >= 0 (also the fallback for non-finite extractor outputs).
    :param initial_score: Score of a new transition before its first re-score: ``"max"`` or ``"neutral"``
        (the kind's "don't know": 1, the mean ratio, for the density ratio; 0.5 for the label signals).
    :param include_observation: Add the raw observation to the extractor features (flat Box of <= 32 dims only).
    :param eviction: What a full buffer drops: ``"fifo"`` (the oldest, as SB3) or ``"lowest_score"``
        (the oldest survives by replacing a lower-scored older transition; see ComplementaryReplayBuffer).
    :param extractor_net_arch: Hidden layers of the extractor MLP (default ``[64, 64]``).
    :param extractor_lr_ratio: Extractor learning rate as a fraction of the policy's initial one.
    :param extractor_train_freq: Env steps between extractor fits.
    :param extractor_gradient_steps: Extractor gradient steps per fit.
    :param extractor_batch_size: Extractor minibatch size.
    :param refresh_interval: Env steps between full re-scores of the buffer.
    :param coupling_coef: Weight of KL(sampling distribution ‖ uniform) in the extractor loss, >= 0.
    :param probe_size: Number of freshest transitions used as the influence signal's probe batch.
    :param label_capacity: Number of contribution labels kept (older ones age out).
    :param label_interval: Label signals: label the trained batch on one gradient step in this many.
        Labelling is most of their extra cost per step; larger values cut it and give fewer labels.
    :param candidate_pool: 0: replay samples from the sum tree by the scores of the last
        buffer-wide re-score. ``k >= 1``: draw-time selection instead: every gradient step draws
        ``k * batch_size`` uniform candidates, measures their ``|TD|`` now (forward passes of the
        value network and of the algorithm's own TD target, side-effect free),
        scores them on these fresh features and picks the batch from them by score
        (``select_from_candidates`` of the buffer). The stored ``|TD|`` goes stale within one
        replay cycle; the fresh one costs an extra forward pass of the pool (skipped at ``alpha=0``,
        where the selection is uniform whatever the scores).
        With ``"density_ratio"`` a candidate's score is its ratio weight times its fresh ``|TD|``.
        With HER the pool is relabelled before it is scored (the buffer's ``gather_pool``).
    :param fast_memory: ``"density_ratio"``: the fast memory, the ``fast_memory`` freshest
        transitions (indices into the buffer, never a copy), in ``[16, buffer_size // 2]``: it must
        hold held-out transitions for the classifier's AUC, and the classifier fits once the
        buffer holds twice the fast memory. Default: 2,000, or a fifth of a smaller buffer (the
        study's smallest buffer, 10,000 transitions, had its fast memory at a fifth), at least 16.
    :param ratio_temperature: ``"density_ratio"``: the ratio enters as ``ratio ** (1 / T)``, > 0.
    :param ratio_cap: ``"density_ratio"``: largest self-normalised weight, >= 1.
    :param weighting: ``"sampling"`` (draw ∝ the mixture of the uniform share and the scores) or
        ``"loss"`` (draw uniformly as SB3 does, and weight each sample's loss by ``N * P(i)`` of
        that same mixture).
    :param ratio_is_exponent: ``"density_ratio"`` with ``weighting="sampling"``: the IS exponent, in
        [0, 1], fixed (not annealed). 0 keeps the shift toward the current agent's data; 1 undoes it.
    :param task_balanced_labels: Multi-task runs: fit the extractor on each label's rank among the
        stored labels of the same task (``info["task_id"]``), the analogue of the paper's group-wise
        normalisation, so that one easy task cannot monopolise the replay. It changes the fitting
        targets only, not which transitions are labelled; with a single task the labels become
        their ranks (same order).
    """

    extractor: ExperienceExtractor
    label_store: LabelStore
    contribution_signal: ContributionSignal | None

    def __init__(
        self,
        *args: Any,
        contribution: str = "density_ratio",
        alpha: float = 1.0,
        beta: float = 0.4,
        epsilon: float = 1e-3,
        uniform_fraction: float = 0.25,
        score_floor: float = 0.01,
        initial_score: str = "neutral",
        include_observation: bool = False,
        eviction: str = "fifo",
        extractor_net_arch: list[int] | None = None,
        extractor_lr_ratio: float = 0.25,
        extractor_train_freq: int = 500,
        extractor_gradient_steps: int = 64,
        extractor_batch_size: int = 256,
        refresh_interval: int = 1000,
        coupling_coef: float = 0.1,
        probe_size: int = 64,
        label_capacity: int = 20_000,
        label_interval: int = 1,
        candidate_pool: int = 4,
        fast_memory: int | None = None,
        ratio_temperature: float = 1.5,
        ratio_cap: float = 10.0,
        weighting: str = "sampling",
        ratio_is_exponent: float = 0.0,
        task_balanced_labels: bool = False,
        _init_setup_model: bool = True,
        **kwargs: Any,
    ) -> None:
        kwargs["_init_setup_model"] = False  # the knobs below must exist before _setup_model runs
        super().__init__(*args, **kwargs)
        self._init_replay_knobs(
            alpha, beta, epsilon, uniform_fraction, score_floor, initial_score, include_observation, eviction
        )
        check_choice("contribution", contribution, CONTRIBUTIONS)
        check_choice("weighting", weighting, WEIGHTINGS)
        # The classifier fits once the buffer holds twice the fast memory (fast and slow must differ).
        fittable = self.buffer_size // 2 if contribution == "density_ratio" else None
        if fast_memory is None:
            fast_memory = min(DEFAULT_FAST_MEMORY, max(MIN_FAST_MEMORY, self.buffer_size // FAST_MEMORY_DIVISOR))
            if fittable is not None and fast_memory > fittable:
                warnings.warn(
                    f"buffer_size={self.buffer_size} is below twice the smallest fast memory ({MIN_FAST_MEMORY}): "
                    "the density-ratio classifier can never be fitted, so its weights stay 1 and only fresh |TD| "
                    f"selects; use buffer_size >= {2 * MIN_FAST_MEMORY}",
                    stacklevel=2,
                )
        else:
            check_range("fast_memory", fast_memory, low=MIN_FAST_MEMORY, high=fittable)
        check_range("ratio_temperature", ratio_temperature, low=0.0, low_open=True)
        check_range("ratio_cap", ratio_cap, low=1.0)
        check_range("ratio_is_exponent", ratio_is_exponent, low=0.0, high=1.0)
        if importance_for(contribution).needs_pool and not candidate_pool:
            raise ValueError(
                f"contribution={contribution!r} measures |TD| on a candidate pool: set candidate_pool >= 1"
            )
        if weighting == "loss" and candidate_pool:
            raise ValueError(
                f"weighting='loss' draws uniformly: it cannot select from a candidate_pool ({candidate_pool}); "
                "pass candidate_pool=0 with it"
            )
        net_arch = [64, 64] if extractor_net_arch is None else list(extractor_net_arch)
        if not net_arch or any(int(w) < 1 for w in net_arch):
            raise ValueError(f"extractor_net_arch must be a non-empty list of positive layer sizes, got {net_arch!r}")
        check_range("extractor_lr_ratio", extractor_lr_ratio, low=0.0, low_open=True)
        check_range("extractor_train_freq", extractor_train_freq, low=1)
        check_range("extractor_gradient_steps", extractor_gradient_steps, low=1)
        check_range("extractor_batch_size", extractor_batch_size, low=1)
        check_range("refresh_interval", refresh_interval, low=1)
        check_range("coupling_coef", coupling_coef, low=0.0)
        check_range("probe_size", probe_size, low=1)
        check_range("label_capacity", label_capacity, low=1)
        check_range("label_interval", label_interval, low=1)
        check_range("candidate_pool", candidate_pool, low=0)
        if int(candidate_pool) != candidate_pool:
            raise ValueError(f"candidate_pool must be a whole number of batches (0 = off), got {candidate_pool!r}")
        if not isinstance(task_balanced_labels, (bool, np.bool_)):
            raise ValueError(f"task_balanced_labels must be a bool (True or False), got {task_balanced_labels!r}")
        self.contribution = contribution
        self.extractor_net_arch = net_arch
        self.extractor_lr_ratio = extractor_lr_ratio
        self.extractor_train_freq = extractor_train_freq
        self.extractor_gradient_steps = extractor_gradient_steps
        self.extractor_batch_size = extractor_batch_size
        self.refresh_interval = refresh_interval
        self.coupling_coef = coupling_coef
        self.probe_size = probe_size
        self.label_capacity = label_capacity
        self.label_interval = label_interval
        self.candidate_pool = int(candidate_pool)
        self.fast_memory = int(fast_memory)
        self.ratio_temperature = ratio_temperature
        self.ratio_cap = ratio_cap
        self.weighting = weighting
        self.ratio_is_exponent = ratio_is_exponent
        #: Held-out ROC AUC of the density-ratio classifier at its last fit (NaN before the first).
        self.extractor_auc = float("nan")
        #: ``num_timesteps`` of the last fit and re-score: the extractor's schedule, saved with the model.
        self.last_fit_step = 0
        self.last_refresh_step = 0
        #: Replay rates ``P * q_i`` of the last 1,000 draw-time selections (with ``candidate_pool``).
        self._selection_rates: deque[np.ndarray] = deque(maxlen=1000)
        self.task_balanced_labels = bool(task_balanced_labels)
        self._n_feedback = 0
        if _init_setup_model:
            self._setup_model()

    @property
    def importance(self) -> ReplayImportance:
        """What scores the replay, as chosen by ``contribution`` (common/importance.py)."""
        return importance_for(self.contribution)

    def _setup_model(self) -> None:
        super()._setup_model()
        buffer = self.replay_buffer
        n_inputs = self.importance.input_dim(buffer)
        # Initialising the extractor draws from torch's RNG: on a fork, so that the policy's own draws
        # (a SAC actor sampling actions) stay where the uniform parent algorithm would have them.
        with preserved_rng(self.device):
            self.extractor = ExperienceExtractor(
                n_inputs,
                self.extractor_net_arch,
                learning_rate=self.extractor_lr_ratio * self.lr_schedule(1.0),
                device=self.device,
            )
        # Multi-task runs: fit on labels ranked within each task, so one easy task cannot monopolise the replay.
        task_column = TASK_FEATURE_COLUMN if self.task_balanced_labels else None
        self.label_store = LabelStore(self.label_capacity, buffer.n_features, task_column=task_column)
        self._configure_buffer(buffer)
        loaded = self.__dict__.get("contribution_signal")  # set by SB3's load() from the saved data
        if not self.importance.learns_labels:
            self.contribution_signal = None
        elif isinstance(loaded, SIGNALS[self.contribution]):
            self.contribution_signal = loaded  # a resumed run keeps its labels and the signal's state
            self.label_store = loaded.store
        else:
            self.contribution_signal = make_signal(self.contribution, self.label_store)
        self.needs_influence = self.contribution_signal is not None and self.contribution_signal.needs_influence

    def _adopt_buffer(self, buffer: ComplementaryReplayBuffer) -> None:
        super()._adopt_buffer(buffer)
        if not hasattr(buffer, "neutral_score"):
            warnings.warn(
                "Replay buffer saved before the density-ratio extractor (no neutral_score): migrating it; "
                "its scores are kept and are replaced at the next re-score.",
                stacklevel=3,
            )
        self._configure_buffer(buffer)

    def _configure_buffer(self, buffer: ComplementaryReplayBuffer) -> None:
        """What the importance kind asks of the buffer: a new transition's score, the protected fast rows."""
        buffer.neutral_score = self.importance.neutral_score
        buffer.protected_recent_rows = self.importance.protected_rows(self)

    def _begin_weighted_train(self) -> None:
        super()._begin_weighted_train()
        exponent = self.importance.is_exponent(self)
        if exponent is not None:  # a fixed exponent: the shift the scores make is not annealed away
            self.replay_buffer.beta = exponent

    def _label_due(self) -> bool:
        """
        Whether the current gradient step labels its batch: one step in ``label_interval``.

        Consecutive batches carry nearly the same information about the extractor's target,
        and labelling (the influence's probe pass, the feature gather) is most of the extra cost
        per step, so labels are subsampled in time; |TD| and use counts are recorded every step.
        """
        return self.contribution_signal is not None and self._n_feedback % self.label_interval == 0

    def _draw_batch(self, batch_size: int) -> WeightedSamples:
        if self.weighting == "loss":
            return self.replay_buffer.sample_loss_weighted(batch_size, env=self._vec_normalize_env)
        if not self.candidate_pool:
            return super()._draw_batch(batch_size)
        buffer = self.replay_buffer
        # With HER the pool holds relabelled candidates, each scored on its own goal's |TD|.
        candidates = buffer.uniform_indices(self.candidate_pool * batch_size)
        samples, candidates = buffer.gather_pool(candidates, env=self._vec_normalize_env)
        if buffer.alpha == 0:  # every priority is 1 whatever the scores: skip measuring them (same draws)
            scores = np.ones(len(candidates), dtype=np.float32)
        else:
            scores = self.importance.candidate_scores(self, candidates, self._current_td_abs(samples))
        batch, rates = buffer.select_from_candidates(
            candidates, samples, scores, batch_size, max_normalized=self.importance.max_normalized_weights
        )
        self._selection_rates.append(rates)
        return batch

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

    def _replay_feedback(self, batch: WeightedSamples, td_abs: np.ndarray, influence: th.Tensor | None) -> None:
        self._record_weights(batch)
        if self._label_due():
            assert self.contribution_signal is not None
            # With draw-time selection the batch was scored on its |TD| at the step's starting
            # parameters, which is td_abs: label the features it was selected on.
            fresh_td = td_abs if self.candidate_pool else None
            features = self.replay_buffer.feature_matrix(batch.indices, td_abs=fresh_td)
            self.contribution_signal.observe(
                features,
                td_abs,
                batch.control,
                None if influence is None else influence.detach().cpu().numpy(),
            )
        self.replay_buffer.record_use(batch.indices, td_abs)
        self._n_feedback += 1

    # ------------------------------------------------------------------ the extractor's schedule
    def fit_extractor(
        self,
        gradient_steps: int | None = None,
        batch_size: int | None = None,
        coupling_coef: float | None = None,
    ) -> float:
        """
        Take the extractor's gradient steps (the :class:`ExtractorTrainingCallback` schedules this).

        Density ratio (the fast/slow classifier): balanced BCE of the fast memory against the
        whole buffer, then its held-out ROC AUC (``extractor_auc``). It waits until the buffer
        holds twice the fast memory. Label signals: close the signal's window, then BCE on the
        label store plus ``coupling_coef`` × KL(sampling distribution ‖ uniform).

        :param gradient_steps: Default: ``extractor_gradient_steps``.
        :param batch_size: Default: ``extractor_batch_size``.
        :param coupling_coef: Label signals only. Default: the model's ``coupling_coef``.
        :return: Mean loss of the fit (NaN when there was nothing to fit on yet).
        """
        loss = self.importance.fit(
            self,
            self.extractor_gradient_steps if gradient_steps is None else gradient_steps,
            self.extractor_batch_size if batch_size is None else batch_size,
            self.coupling_coef if coupling_coef is None else coupling_coef,
        )
        if not np.isnan(loss):
            self.logger.record("complementary/extractor_loss", loss)
        return loss

    def refresh_scores(self) -> None:
        """
        Re-score every stored transition with batched forward passes, rebuild the sum tree, and
        log the replay's health (:meth:`replay_diagnostics`, and the scores by age quartile).

        Density ratio: the tempered, self-normalised, capped ratio of
        :func:`~sb3_complementary.common.density_ratio.ratio_weights` (all 1 until the first fit).
        ``fresh_td`` scores at draw time: only the health is logged.
        """
        buffer = self.replay_buffer
        indices = self.importance.rescore(self)
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

    def replay_diagnostics(self) -> dict[str, float]:
        """
        What the replay does now, as a query (nothing is written): the ESS fraction of the replay
        distribution (1 = uniform), the range of ``N * P(i)`` over the buffer (``weight_p5``,
        ``weight_p95``, ``weight_max``; 1 everywhere for uniform replay) and the classifier's
        held-out ROC AUC (``roc_auc``, NaN for label signals and before the first fit). With
        draw-time selection (``candidate_pool``) the draws are decided in the pool, so the range is
        that of the rates ``P * q_i`` over the candidates of the last 1,000 pools.
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

        :param shares: From :meth:`~sb3_complementary.common.buffers.ComplementaryReplayBuffer.task_shares`.
        """
        if len(shares) < 2:
            return  # single-task run: nothing to compare
        for task, (sample_share, data_share) in shares.items():
            self.logger.record(f"complementary/task_{task}_sample_share", sample_share)
            self.logger.record(f"complementary/task_{task}_data_share", data_share)

    def _setup_learn(
        self,
        total_timesteps: int,
        callback: MaybeCallback = None,
        reset_num_timesteps: bool = True,
        tb_log_name: str = "run",
        progress_bar: bool = False,
    ) -> tuple[int, BaseCallback]:
        if not _contains_extractor_callback(callback):
            if callback is None:
                callback = ExtractorTrainingCallback()
            elif isinstance(callback, list):
                callback = [*callback, ExtractorTrainingCallback()]
            elif isinstance(callback, BaseCallback):
                callback = CallbackList([callback, ExtractorTrainingCallback()])
            else:  # a plain function callback, wrapped as SB3 would wrap it
                callback = CallbackList([ConvertCallback(callback), ExtractorTrainingCallback()])
        return super()._setup_learn(total_timesteps, callback, reset_num_timesteps, tb_log_name, progress_bar)

    def _excluded_save_params(self) -> list[str]:
        # The extractor travels as state dicts; the label store inside the signal (saved, not twice).
        transient = ["extractor", "label_store", "_selection_rates"]
        return [*super()._excluded_save_params(), *transient]

    def _get_torch_save_params(self) -> tuple[list[str], list[str]]:
        state_dicts, variables = super()._get_torch_save_params()
        return [*state_dicts, "extractor", "extractor.optimizer"], variables


def _contains_extractor_callback(callback: Any) -> bool:
    if isinstance(callback, ExtractorTrainingCallback):
        return True
    if isinstance(callback, CallbackList):
        return any(_contains_extractor_callback(c) for c in callback.callbacks)
    if isinstance(callback, list):
        return any(_contains_extractor_callback(c) for c in callback)
    return False
