"""ComplementaryDQN: SB3 DQN whose replay is run by a co-evolving experience extractor."""

from typing import Any, ClassVar, TypeVar

from stable_baselines3.common.policies import BasePolicy
from stable_baselines3.dqn.policies import CnnPolicy, MlpPolicy, MultiInputPolicy

from sb3_complementary.common.complementary_mixin import ComplementaryMixin
from sb3_complementary.dqn.weighted_dqn import WeightedDQN

SelfComplementaryDQN = TypeVar("SelfComplementaryDQN", bound="ComplementaryDQN")


class ComplementaryDQN(ComplementaryMixin, WeightedDQN):
    """
    DQN with Complementary replay: a small experience extractor scores every stored transition
    by how much it demonstrably helps the Q-network now, and replay samples by those scores.

    Idea: Complementary RL (arXiv 2603.17621), mapped onto SB3 in docs/design.md. Drop-in:
    ``ComplementaryDQN("MlpPolicy", env).learn(100_000)`` works wherever ``DQN`` does. It takes
    every argument of SB3's ``DQN`` (positional ones included), plus these keyword knobs:

    :param contribution: What the extractor learns: ``"influence"`` (does a gradient step on the
        transition lower the TD loss on fresh experience, more than the uniform control group's
        transitions do), ``"outcome"`` (did training-episode returns improve after it was replayed)
        or ``"td"`` (its ``|TD|`` rank: learned PER).
    :param alpha: Priority exponent on the scores, ``P ∝ (score + epsilon) ** alpha``, >= 0.
    :param beta: Initial IS exponent in [0, 1], annealed to 1 over ``learn()``.
    :param epsilon: Added to the scores, >= 0.
    :param uniform_fraction: Share of each batch drawn uniformly, in [0, 1]: the guard against
        feedback loops and the control group of the influence signal.
    :param score_floor: Minimum score, >= 0 (also the fallback for non-finite extractor outputs).
    :param initial_score: Score of a new transition before its first re-score: ``"max"`` or ``"neutral"`` (0.5).
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
    :param label_interval: Label the trained batch on one gradient step in this many (labels are
        subsampled in time; consecutive batches say nearly the same thing and labelling is most of the cost).
    """

    policy_aliases: ClassVar[dict[str, type[BasePolicy]]] = {
        "MlpPolicy": MlpPolicy,
        "CnnPolicy": CnnPolicy,
        "MultiInputPolicy": MultiInputPolicy,
    }

    def __init__(
        self,
        *args: Any,
        contribution: str = "influence",
        alpha: float = 0.6,
        beta: float = 0.4,
        epsilon: float = 1e-3,
        uniform_fraction: float = 0.25,
        score_floor: float = 0.01,
        initial_score: str = "max",
        include_observation: bool = False,
        eviction: str = "fifo",
        extractor_net_arch: list[int] | None = None,
        extractor_lr_ratio: float = 0.25,
        extractor_train_freq: int = 500,
        extractor_gradient_steps: int = 16,
        extractor_batch_size: int = 256,
        refresh_interval: int = 1000,
        coupling_coef: float = 0.1,
        probe_size: int = 64,
        label_capacity: int = 20_000,
        label_interval: int = 4,
        _init_setup_model: bool = True,
        **kwargs: Any,
    ) -> None:
        kwargs["_init_setup_model"] = False  # the knobs below must exist before _setup_model runs
        super().__init__(*args, **kwargs)
        self._init_replay_knobs(
            alpha, beta, epsilon, uniform_fraction, score_floor, initial_score, include_observation, eviction
        )
        self._init_extractor_knobs(
            contribution,
            extractor_net_arch,
            extractor_lr_ratio,
            extractor_train_freq,
            extractor_gradient_steps,
            extractor_batch_size,
            refresh_interval,
            coupling_coef,
            probe_size,
            label_capacity,
            label_interval,
        )
        if _init_setup_model:
            self._setup_model()
