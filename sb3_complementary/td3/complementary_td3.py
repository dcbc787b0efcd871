"""ComplementaryTD3: SB3's TD3 whose replay is run by a co-evolving experience extractor."""

from typing import Any, ClassVar

from stable_baselines3.common.policies import BasePolicy
from stable_baselines3.td3.policies import CnnPolicy, MlpPolicy, MultiInputPolicy

from sb3_complementary.common.complementary_mixin import ComplementaryMixin
from sb3_complementary.td3.weighted_td3 import WeightedTD3


class ComplementaryTD3(ComplementaryMixin, WeightedTD3):
    """
    TD3 with Complementary replay: a small experience extractor scores every stored transition
    by how much it demonstrably helps the critic now, and replay samples by those scores.

    The IS weights multiply each sample's critic loss ``Σ_c (Q_c(s, a) - y)²``; the (delayed)
    actor loss stays unweighted. The influence signal is measured on the critic loss at the last linear
    layer of the first critic (docs/algorithms/actor_critic.md).

    Drop-in: ``ComplementaryTD3("MlpPolicy", env).learn(...)`` works wherever ``TD3`` does. It
    takes every argument of SB3's ``TD3`` (positional ones included), plus the knobs of
    ``ComplementaryDQN``, with the same meaning and defaults:

    :param contribution: ``"influence"``, ``"outcome"`` or ``"td"`` (what the extractor learns).
    :param alpha: Priority exponent on the scores, >= 0.
    :param beta: Initial IS exponent in [0, 1], annealed to 1 over ``learn()``.
    :param epsilon: Added to the scores, >= 0.
    :param uniform_fraction: Share of each batch drawn uniformly, in [0, 1] (the control group).
    :param score_floor: Minimum score, >= 0.
    :param initial_score: ``"max"`` or ``"neutral"``.
    :param include_observation: Add the raw observation to the extractor features (flat Box of <= 32 dims only).
    :param eviction: ``"fifo"`` or ``"lowest_score"``.
    :param extractor_net_arch: Hidden layers of the extractor MLP (default ``[64, 64]``).
    :param extractor_lr_ratio: Extractor learning rate as a fraction of the policy's initial one.
    :param extractor_train_freq: Env steps between extractor fits.
    :param extractor_gradient_steps: Extractor gradient steps per fit.
    :param extractor_batch_size: Extractor minibatch size.
    :param refresh_interval: Env steps between full re-scores of the buffer.
    :param coupling_coef: Weight of KL(sampling distribution ‖ uniform) in the extractor loss, >= 0.
    :param probe_size: Number of freshest transitions used as the influence signal's probe batch.
    :param label_capacity: Number of contribution labels kept.
    :param label_interval: Label the trained batch (and measure its influence) on one gradient step in this many.
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
