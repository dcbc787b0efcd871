"""The train-step glue shared by every algorithm whose replay draws by score: the draw, the feedback, the buffer."""

import warnings
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
import torch as th
from gymnasium import spaces
from stable_baselines3.common.type_aliases import MaybeCallback
from stable_baselines3.her import HerReplayBuffer

from sb3_complementary.common.buffers import (
    ComplementaryDictReplayBuffer,
    ComplementaryNStepReplayBuffer,
    ComplementaryReplayBuffer,
    Samples,
    WeightedSamples,
)
from sb3_complementary.common.her_replay_buffer import ComplementaryHerReplayBuffer
from sb3_complementary.common.migration import migrate_saved
from sb3_complementary.common.persistence import ReplayPersistenceMixin
from sb3_complementary.common.side_effects import side_effect_free
from sb3_complementary.common.signature import combined_signature
from sb3_complementary.common.validation import check_range

if TYPE_CHECKING:
    from stable_baselines3.common.off_policy_algorithm import OffPolicyAlgorithm

    _Base = OffPolicyAlgorithm
else:
    _Base = object

__all__ = ["Samples", "WeightedReplayMixin"]

#: Knobs the model hands to its buffer; ``replay_buffer_kwargs`` must not set them a second time.
BUFFER_KNOBS = ("alpha", "beta", "epsilon", "uniform_fraction", "score_floor", "initial_score")

_SelfWeighted = TypeVar("_SelfWeighted", bound="WeightedReplayMixin")


class WeightedReplayMixin(ReplayPersistenceMixin, _Base):
    """
    Mixin for an SB3 off-policy algorithm that replays through a :class:`ComplementaryReplayBuffer`.

    It builds the buffer (flat, Dict, n-step or HER) from the model's replay knobs, and gives the
    train steps of ``weighted_*.py`` their shared lines: :meth:`_begin_weighted_train` (the IS
    exponent of this ``train()`` call), :meth:`_draw_batch` (a batch with IS weights) and
    :meth:`_replay_feedback` (the step's ``|TD|`` back to the replay). A train step states its
    TD target (:meth:`_td_target`) and current estimate (:meth:`_current_values`); the concrete
    mixin decides what the feedback does (:meth:`_feed_back`).
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
        check_range("alpha", alpha, low=0.0)
        check_range("epsilon", epsilon, low=0.0)
        check_range("uniform_fraction", uniform_fraction, low=0.0, high=1.0)
        check_range("score_floor", score_floor, low=0.0)
        doubled = sorted(set(BUFFER_KNOBS) & set(self.replay_buffer_kwargs or {}))
        if doubled:
            raise ValueError(
                f"replay_buffer_kwargs sets {doubled}: these are knobs of {type(self).__name__} itself "
                f"(pass them to its constructor, once)"
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

    # ------------------------------------------------------------------ the train step's shared lines
    def _begin_weighted_train(self) -> None:
        """Start a ``train()`` call: set the buffer's IS exponent (:meth:`_is_exponent`)."""
        self.replay_buffer.beta = self._is_exponent()

    def _is_exponent(self) -> float:
        """The IS exponent of the draws now (the buffer's ``beta``)."""
        raise NotImplementedError

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
