"""Glue shared by every algorithm whose replay samples by score and corrects with IS weights."""

import io
import pathlib
import pickle
import warnings
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
import torch as th
from gymnasium import spaces
from stable_baselines3.common.buffers import ReplayBuffer
from stable_baselines3.common.save_util import load_from_pkl, save_to_pkl
from stable_baselines3.common.type_aliases import MaybeCallback
from stable_baselines3.her import HerReplayBuffer

from sb3_complementary.common.buffers import (
    ComplementaryDictReplayBuffer,
    ComplementaryNStepReplayBuffer,
    ComplementaryReplayBuffer,
    Samples,
    WeightedSamples,
)
from sb3_complementary.common.contribution import last_layer_influence
from sb3_complementary.common.her_replay_buffer import ComplementaryHerReplayBuffer
from sb3_complementary.common.persistence import atomic_write, check_save_file
from sb3_complementary.common.side_effects import side_effect_free
from sb3_complementary.common.signature import combined_signature
from sb3_complementary.common.validation import check_range

if TYPE_CHECKING:
    from stable_baselines3.common.off_policy_algorithm import OffPolicyAlgorithm

    _Base = OffPolicyAlgorithm
else:
    _Base = object

#: Knobs forwarded from the algorithm's constructor to the buffer.
BUFFER_KNOBS = (
    "alpha",
    "beta",
    "epsilon",
    "uniform_fraction",
    "score_floor",
    "initial_score",
    "include_observation",
    "eviction",
)

#: A probe batch and its TD targets, fixed for one ``train()`` call.
Probe = tuple[Samples, th.Tensor]


_SelfWeighted = TypeVar("_SelfWeighted", bound="WeightedReplayMixin")


class WeightedReplayMixin(_Base):
    """
    Mixin for an SB3 off-policy algorithm that replays through a :class:`ComplementaryReplayBuffer`.

    It picks the buffer (Dict or flat, n-step included), forwards the replay knobs to it,
    anneals ``beta`` to 1 over training, logs the IS weights, and makes saving atomic.
    Subclasses decide what the scores are by implementing :meth:`_replay_feedback`.

    The influence signal is measured here too (:meth:`_probe`, :meth:`_influence`); an algorithm
    only states its TD target (:meth:`_td_target`) and the output gradient and penultimate
    features of its critic's last linear layer on the probe batch (:meth:`_probe_gradients`).
    """

    replay_buffer: ComplementaryReplayBuffer

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        signature = combined_signature(cls)
        if signature is not None:
            cls.__signature__ = signature  # type: ignore[attr-defined]

    #: What ``replay_buffer_class=HerReplayBuffer`` (SB3's) stands for with this algorithm.
    her_buffer_class: type[ComplementaryHerReplayBuffer] = ComplementaryHerReplayBuffer
    #: Whether ``train()`` must compute each sample's last-layer influence (the influence signal).
    needs_influence: bool = False
    probe_size: int
    #: The current ``train()`` call's probe batch (:meth:`_probe`), measured when first needed.
    _train_probe: Probe | None = None

    def _init_replay_knobs(
        self,
        alpha: float,
        beta: float,
        epsilon: float,
        uniform_fraction: float,
        score_floor: float,
        initial_score: str,
        include_observation: bool,
        eviction: str,
    ) -> None:
        check_range("alpha", alpha, low=0.0)
        check_range("beta", beta, low=0.0, high=1.0)
        check_range("epsilon", epsilon, low=0.0)
        check_range("uniform_fraction", uniform_fraction, low=0.0, high=1.0)
        check_range("score_floor", score_floor, low=0.0)
        given = dict(
            alpha=alpha,
            beta=beta,
            epsilon=epsilon,
            uniform_fraction=uniform_fraction,
            score_floor=score_floor,
            initial_score=initial_score,
            include_observation=include_observation,
            eviction=eviction,
        )
        for knob, value in given.items():  # one source of truth: the constructor's knob
            in_buffer_kwargs = (self.replay_buffer_kwargs or {}).get(knob, value)
            if in_buffer_kwargs != value:
                raise ValueError(
                    f"{knob} is set twice: {type(self).__name__}({knob}={value!r}) and "
                    f"replay_buffer_kwargs[{knob!r}]={in_buffer_kwargs!r}; set it once, as the constructor's {knob}"
                )
        self.alpha = alpha
        self.beta = beta
        self.epsilon = epsilon
        self.uniform_fraction = uniform_fraction
        self.score_floor = score_floor
        self.initial_score = initial_score
        self.include_observation = include_observation
        self.eviction = eviction
        self._is_weight_stats: list[np.ndarray] = []

    def _setup_model(self) -> None:
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
        # The knobs live on the model, once: the buffer is built from them. Values inside
        # replay_buffer_kwargs (a model saved before this rule) yield to the model's, which is
        # where SB3's load(..., alpha=0.1) writes an override. SB3 keeps a reference to the
        # user's dict, so it is copied, never filled in.
        user_kwargs = {k: v for k, v in self.replay_buffer_kwargs.items() if k not in BUFFER_KNOBS}
        self.replay_buffer_kwargs = {**user_kwargs, **{knob: getattr(self, knob) for knob in BUFFER_KNOBS}}
        if self.n_steps > 1:
            self.replay_buffer_kwargs.setdefault("n_steps", self.n_steps)
            self.replay_buffer_kwargs.setdefault("gamma", self.gamma)
        # SB3 would warn that n_steps is ignored with a custom buffer class; ours receives it
        # above, so SB3's set-up runs with n_steps=1 (n_steps is read nowhere else).
        n_steps, self.n_steps = self.n_steps, 1
        try:
            super()._setup_model()
        finally:
            self.n_steps = n_steps
        self.replay_buffer_kwargs = user_kwargs
        # A loaded model keeps its generator (saved with the data): a resumed run draws on.
        self.replay_rng = self.__dict__.get("replay_rng") or np.random.default_rng(self.seed)
        self.replay_buffer.seed_eviction(self.seed)

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

    def _begin_weighted_train(self) -> None:
        """Start a ``train()`` call: forget the last call's probe; anneal ``beta`` linearly to 1 over the budget."""
        self._train_probe = None
        progress = 1.0 - self._current_progress_remaining
        self.replay_buffer.beta = self.beta + (1.0 - self.beta) * progress

    def _draw_batch(self, batch_size: int) -> WeightedSamples:
        """One gradient step's batch with its IS weights: from the sum tree, by the stored scores."""
        return self.replay_buffer.sample_weighted(batch_size, env=self._vec_normalize_env)

    def _replay_feedback(self, batch: WeightedSamples, td_abs: np.ndarray, influence: th.Tensor | None) -> None:
        """Feed one gradient step's measurements back to the replay (scores, labels, counters)."""
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

    def _reducible_loss(self, data: Samples) -> np.ndarray:
        """
        ``(n,)`` each sample's loss under the online network minus its loss under the target
        network, on the same TD target, clipped at 0 (ReLo's priority), without side effects.
        """
        raise NotImplementedError

    def sampling_ess_fraction(self) -> float:
        """ESS fraction of the replay's sampling distribution (1 = uniform); see ``ess_fraction`` of the buffer."""
        return self.replay_buffer.ess_fraction()

    def _label_due(self) -> bool:
        """Whether this gradient step produces contribution labels (and so needs the influence)."""
        return False

    # ------------------------------------------------------------------ influence signal
    def _td_target(self, data: Samples) -> th.Tensor:
        """The algorithm's TD target for a batch (for the probe batch, measured by :meth:`_probe`)."""
        raise NotImplementedError

    def _probe_gradients(self, probe: Samples, probe_target: th.Tensor) -> tuple[th.Tensor, th.Tensor]:
        """
        ``(M, K)`` gradients of each probe sample's own critic loss w.r.t. the outputs of the first
        critic's last linear layer, and ``(M, H)`` that layer's inputs.
        """
        raise NotImplementedError

    def _measures_influence(self) -> bool:
        """Whether this gradient step needs each sample's influence: the signal uses it and the step labels."""
        return self.needs_influence and self._label_due()

    def _probe(self) -> Probe:
        """
        The probe batch (the ``probe_size`` freshest transitions, normalised like training batches)
        and its TD targets.

        A ``train()`` call measures it once, on the first step that needs the influence, and keeps it. The
        targets are measured without side effects: no gradient, the policy in eval mode,
        torch's RNG preserved (a SAC probe samples next actions, and must not shift the stream
        that training draws from).
        """
        if self._train_probe is None:
            buffer = self.replay_buffer
            probe = buffer.get_samples_at(buffer.recent_indices(self.probe_size), env=self._vec_normalize_env)
            with side_effect_free(self.policy, self.device):
                self._train_probe = probe, self._td_target(probe)
        return self._train_probe

    def _influence(self, out_grad: th.Tensor, penultimate: th.Tensor) -> th.Tensor:
        """
        Each sample's first-order effect on the probe loss, at the parameters the step starts from.

        :param out_grad: ``(B, K)`` gradient of each trained sample's own (unweighted) critic loss
            w.r.t. the outputs of the first critic's last linear layer.
        :param penultimate: ``(B, H)`` inputs of that layer for the trained batch.
        :return: ``(B,)`` :func:`last_layer_influence` on this ``train()`` call's :meth:`_probe`.
        """
        probe = self._probe()
        with side_effect_free(self.policy, self.device):
            return last_layer_influence(out_grad, penultimate, *self._probe_gradients(*probe))

    def _record_weights(self, batch: WeightedSamples) -> None:
        self._is_weight_stats.append(batch.raw_weights)

    def _log_weights(self) -> None:
        if self._is_weight_stats:
            weights = np.concatenate(self._is_weight_stats)
            self.logger.record("complementary/is_weight_mean", float(weights.mean()))
            self.logger.record("complementary/is_weight_max", float(weights.max()))
            self.logger.record("complementary/beta", self.replay_buffer.beta)
            self._is_weight_stats = []

    def _excluded_save_params(self) -> list[str]:
        return [*super()._excluded_save_params(), "_train_probe"]

    @classmethod
    def load(cls, path: str | pathlib.Path | io.BufferedIOBase, *args: Any, **kwargs: Any) -> Any:
        """
        SB3's ``load``, after checking that ``path`` is a whole SB3 save file: a truncated or
        corrupted file raises a ``ValueError`` naming the file and what is wrong, instead of an
        error from deep inside ``zipfile`` or torch.
        """
        if not isinstance(path, io.IOBase):
            check_save_file(path)
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
        """Pickle the buffer (data, features, scores and tree) atomically."""
        if isinstance(path, io.BufferedIOBase):
            save_to_pkl(path, self.replay_buffer, self.verbose)
            return
        target = pathlib.Path(path)
        if target.suffix == "":
            target = pathlib.Path(f"{target}.pkl")
        atomic_write(target, lambda file: save_to_pkl(file, self.replay_buffer, self.verbose))

    def load_replay_buffer(self, path: str | pathlib.Path | io.BufferedIOBase, truncate_last_traj: bool = True) -> None:
        """
        Load a pickled buffer. A plain SB3 buffer (saved without scores or features) is migrated
        into a :class:`ComplementaryReplayBuffer` with fresh features and initial scores, and the
        migration is logged as a warning.
        """
        try:
            loaded = load_from_pkl(path, self.verbose)
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
                    f"{path} holds SB3's HerReplayBuffer, without scores or features; {type(self).__name__} "
                    "cannot migrate it (its episode bookkeeping would need rebuilding): collect a new buffer"
                )
            if self.env is None:
                raise ValueError(
                    f"Cannot load the HER replay buffer {path} into a model without an env: HER computes the "
                    "rewards of relabelled goals with it. Call model.set_env(env) first, or pass env to load()."
                )
            loaded.set_env(self.env)
        if not isinstance(loaded, ComplementaryReplayBuffer) or not hasattr(loaded, "features"):
            warnings.warn(
                f"Replay buffer {path} has no complementary scores/features ({type(loaded).__name__}); "
                "migrating it: features are rebuilt from rewards/dones and every transition gets the initial score.",
                stacklevel=2,
            )
            loaded = self._migrate_buffer(loaded)
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
        # beta is the buffer's live, annealed value: train() sets it from the model's schedule.
        changed = [k for k in BUFFER_KNOBS if k != "beta" and getattr(buffer, k) != getattr(self, k)]
        for knob in changed:
            setattr(buffer, knob, getattr(self, knob))
        if {"alpha", "epsilon", "score_floor"} & set(changed):
            buffer.rebuild_priorities()

    def _migrate_buffer(self, old: ReplayBuffer) -> ComplementaryReplayBuffer:
        assert self.replay_buffer_class is not None
        kwargs = {
            **self.replay_buffer_kwargs,
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
