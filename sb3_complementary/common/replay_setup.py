"""
How a weighted-replay algorithm is built: its knobs checked once, its buffer made, its extractor
set up, old saves migrated. Read once, at construction and at ``load()``; the training-time code
is in :mod:`~sb3_complementary.common.replay_algorithm`.
"""

import warnings
from collections import deque
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
from gymnasium import spaces
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.type_aliases import MaybeCallback
from stable_baselines3.her import HerReplayBuffer

from sb3_complementary.common.buffers import (
    NEUTRAL_SCORE,
    ComplementaryDictReplayBuffer,
    ComplementaryNStepReplayBuffer,
    ComplementaryReplayBuffer,
)
from sb3_complementary.common.extractor import ExperienceExtractor
from sb3_complementary.common.extractor_settings import MIN_FAST_MEMORY, extractor_settings
from sb3_complementary.common.her_replay_buffer import ComplementaryHerReplayBuffer
from sb3_complementary.common.migration import check_contribution, check_old_knobs, migrate_saved
from sb3_complementary.common.persistence import ReplayPersistenceMixin
from sb3_complementary.common.selection_strength import SelectionStrengthBandit, WindowedReturnCredit
from sb3_complementary.common.signature import combined_signature
from sb3_complementary.common.validation import check_choice, check_range, check_replay_knobs

if TYPE_CHECKING:
    from stable_baselines3.common.off_policy_algorithm import OffPolicyAlgorithm

    _Base = OffPolicyAlgorithm
else:
    _Base = object

#: Knobs the model hands to its buffer; ``replay_buffer_kwargs`` must not set them a second time.
BUFFER_KNOBS = ("alpha", "beta", "epsilon", "uniform_fraction", "score_floor", "initial_score")
#: What scores the replay: the fast/slow density ratio (the extractor) times fresh ``|TD|``, or
#: fresh ``|TD|`` alone (``fresh_td``; ``laber`` with LaBER's unbiasing IS weights).
CONTRIBUTIONS = ("density_ratio", "fresh_td", "laber")
#: The fixed IS exponent of each kind's draws (``density_ratio``'s is ``extractor_kwargs["is_exponent"]``).
IS_EXPONENTS = {"fresh_td": 0.0, "laber": 1.0}


_SelfWeighted = TypeVar("_SelfWeighted", bound="ReplaySetupMixin")


class ReplaySetupMixin(ReplayPersistenceMixin, _Base):
    """
    Construction of an SB3 off-policy algorithm that replays through a :class:`ComplementaryReplayBuffer`:
    the replay knobs checked once (:meth:`_init_replay_knobs`), the buffer (flat, Dict, n-step or
    HER) built from them (:meth:`_make_buffer`), and the attributes of an older save migrated.
    """

    replay_buffer: ComplementaryReplayBuffer

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        signature = combined_signature(cls)
        if signature is not None:
            cls.__signature__ = signature  # type: ignore[attr-defined]

    #: What ``replay_buffer_class=HerReplayBuffer`` (SB3's) stands for with this algorithm.
    her_buffer_class: type[ComplementaryHerReplayBuffer] = ComplementaryHerReplayBuffer
    #: Score of a new transition: ``"max"`` (PER) or ``"neutral"`` (the scorer's "don't know").
    initial_score = "max"
    #: Whether the algorithm is a Complementary one (for the migration of old saves).
    _complementary = False

    def _init_replay_knobs(self, alpha: float, epsilon: float, uniform_fraction: float, score_floor: float) -> None:
        """Validate and store the knobs the buffer is built from (once: the buffer reads the model's)."""
        check_replay_knobs(alpha, epsilon, uniform_fraction, score_floor)
        doubled = sorted(set(BUFFER_KNOBS) & set(self.replay_buffer_kwargs or {}))
        if doubled:
            raise ValueError(
                f"replay_buffer_kwargs sets {doubled}: {type(self).__name__} sets these on its buffer itself "
                f"(pass the ones its constructor takes to the constructor, once)"
            )
        self.alpha = alpha
        self.epsilon = epsilon
        self.uniform_fraction = uniform_fraction
        self.score_floor = score_floor
        self._is_weight_stats: list[np.ndarray] = []

    def _buffer_knobs(self) -> dict[str, Any]:
        """The replay knobs as the buffer takes them (the model's values win over any saved in the buffer)."""
        return {
            "alpha": self.alpha,
            "beta": self._is_exponent(),
            "epsilon": self.epsilon,
            "uniform_fraction": self.uniform_fraction,
            "score_floor": self.score_floor,
            "initial_score": self.initial_score,
        }

    def _migrate_saved(self) -> None:
        """SB3's ``load()`` has set the saved attributes: bring those of an older version up to now (idempotent)."""
        for change in migrate_saved(self.__dict__, complementary=self._complementary):
            warnings.warn(f"Loading a model saved by an older version: {change}", stacklevel=4)

    def _setup_model(self) -> None:
        self._migrate_saved()
        if self.replay_buffer_class is HerReplayBuffer:  # SB3's HER, weighted as this algorithm weighs
            self.replay_buffer_class = self.her_buffer_class
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
        # A loaded model keeps its generator (saved with the data): a resumed run draws on.
        self.replay_rng = self.__dict__.get("replay_rng") or np.random.default_rng(self.seed)

    def _make_buffer(self) -> ComplementaryReplayBuffer:
        """The buffer SB3's ``_setup_model`` would build, with the replay knobs (and n-step returns) added."""
        assert self.replay_buffer_class is not None
        # Knobs saved inside replay_buffer_kwargs by an older version yield to the model's (read, never written).
        kwargs = {k: v for k, v in self.replay_buffer_kwargs.items() if k not in BUFFER_KNOBS}
        if self.n_steps > 1:
            kwargs = {"n_steps": self.n_steps, "gamma": self.gamma, **kwargs}
        if issubclass(self.replay_buffer_class, HerReplayBuffer):
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
        SB3's ``learn``; ``tb_log_name`` defaults to the class name (``"ComplementaryDQN"``), so
        TensorBoard runs do not collide with the parent algorithm's (``"DQN"``).
        """
        return super().learn(
            total_timesteps=total_timesteps,
            callback=callback,
            log_interval=log_interval,
            tb_log_name=type(self).__name__ if tb_log_name is None else tb_log_name,
            reset_num_timesteps=reset_num_timesteps,
            progress_bar=progress_bar,
        )

    def set_alpha(self, alpha: float) -> None:
        """
        Set the selection strength: the priority exponent ``alpha`` of the draws, >= 0 (0: uniform).

        The buffer reads ``alpha`` at every draw, so the change takes effect at the next gradient
        step; the sum tree's priorities are rebuilt from the stored scores. It is the one way to
        change ``alpha`` during training (a schedule or a controller between windows of ``learn()``).
        """
        check_range("alpha", alpha, low=0.0)
        self.alpha = float(alpha)
        if self.replay_buffer is not None and self.replay_buffer.alpha != self.alpha:
            self.replay_buffer.alpha = self.alpha
            self.replay_buffer.rebuild_priorities()

    def _is_exponent(self) -> float:
        """The IS exponent of the draws now (the buffer's ``beta``)."""
        raise NotImplementedError


class ComplementarySetupMixin(ReplaySetupMixin):
    """The construction of :class:`~sb3_complementary.common.replay_algorithm.ComplementaryMixin` (its knobs)."""

    extractor: ExperienceExtractor
    initial_score = "neutral"
    _complementary = True

    def __init__(
        self,
        *args: Any,
        contribution: str = "laber",
        alpha: float | str = 1.0,
        epsilon: float = 1e-6,
        uniform_fraction: float = 0.0,
        score_floor: float = 0.0,
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
        if isinstance(alpha, str) and alpha != "auto":
            raise ValueError(f"alpha must be a number >= 0 or 'auto' (learned), got {alpha!r}")
        self.contribution = contribution
        self.candidate_pool = int(candidate_pool)
        self.extractor_kwargs = extractor_kwargs
        #: Whether the selection strength is learned (``alpha="auto"``): see ``strength_credit``.
        self.learned_strength = alpha == "auto"
        #: The bandit and its windows with ``alpha="auto"`` (None otherwise), saved with the model.
        self.strength_credit: WindowedReturnCredit | None = None
        settings = extractor_settings(extractor_kwargs, self.buffer_size, self.learned_strength)  # checked once
        if contribution == "density_ratio" and settings["fast_memory"] > self.buffer_size // 2:
            warnings.warn(
                f"buffer_size={self.buffer_size} is below twice the smallest fast memory ({MIN_FAST_MEMORY}): "
                "the density-ratio classifier can never be fitted, so its weights stay 1 and only fresh |TD| "
                f"selects; use buffer_size >= {2 * MIN_FAST_MEMORY}",
                stacklevel=2,
            )
        self._init_replay_knobs(1.0 if self.learned_strength else alpha, epsilon, uniform_fraction, score_floor)  # type: ignore[arg-type]
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
        self.extractor_settings = settings = extractor_settings(
            self.extractor_kwargs, self.buffer_size, self.learned_strength
        )
        if self.learned_strength and self.strength_credit is None:  # a loaded model keeps its own
            bandit = SelectionStrengthBandit(
                settings["strengths"],
                settings["strength_step_size"],
                settings["strength_exploration"],
                settings["strength_share"],
            )
            seed = np.random.SeedSequence(self.seed, spawn_key=(2,))  # never the training draws' generator
            self.strength_credit = WindowedReturnCredit(bandit, settings["strength_window"], seed)
            self.alpha = self.strength_credit.strength  # the buffer is built with the first window's
        super()._setup_model()
        self.extractor = self._build_extractor()
        # The held-out AUC is a query: it draws from its own generator, so that asking for it never
        # shifts the training draws of replay_rng. A loaded model keeps its generator, as replay_rng.
        self.auc_rng = self.__dict__.get("auc_rng") or np.random.default_rng(
            np.random.SeedSequence(self.seed, spawn_key=(1,))
        )
        self._configure_buffer(self.replay_buffer)
        if not hasattr(self, "_selection_rates"):  # a model saved without it
            self._selection_rates = deque(maxlen=1000)

    def _build_extractor(self) -> ExperienceExtractor:
        """A new extractor for this model's buffer and settings, torch's RNG untouched (the mixin's)."""
        raise NotImplementedError

    def _adopt_buffer(self, buffer: ComplementaryReplayBuffer) -> None:
        super()._adopt_buffer(buffer)
        self._configure_buffer(buffer)

    def _configure_buffer(self, buffer: ComplementaryReplayBuffer) -> None:
        """A new transition's score: the mean ratio (1) for the density ratio, the buffer's neutral one otherwise."""
        buffer.neutral_score = 1.0 if self.contribution == "density_ratio" else NEUTRAL_SCORE

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

    # ------------------------------------------------------------------ save / load
    def _excluded_save_params(self) -> list[str]:
        # The extractor travels as state dicts; its settings are rebuilt from extractor_kwargs.
        return [*super()._excluded_save_params(), "extractor", "extractor_settings", "_selection_rates"]

    def _get_torch_save_params(self) -> tuple[list[str], list[str]]:
        state_dicts, variables = super()._get_torch_save_params()
        return [*state_dicts, "extractor", "extractor.optimizer"], variables
