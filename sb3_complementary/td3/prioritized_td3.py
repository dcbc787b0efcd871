"""PrioritizedTD3: SB3's TD3 with classic proportional prioritized experience replay."""

from typing import Any, ClassVar

from stable_baselines3.common.policies import BasePolicy
from stable_baselines3.td3.policies import CnnPolicy, MlpPolicy, MultiInputPolicy

from sb3_complementary.common.prioritized_mixin import PrioritizedMixin
from sb3_complementary.td3.weighted_td3 import WeightedTD3


class PrioritizedTD3(PrioritizedMixin, WeightedTD3):
    """
    TD3 with proportional prioritized experience replay (Schaul et al., 2016): the PER baseline
    for ``ComplementaryTD3``.

    Transitions are sampled with probability ``∝ (|TD| + epsilon) ** alpha`` through a sum tree,
    where ``|TD|`` is the first critic's ``|Q_1(s, a) - y|``;
    ``beta`` anneals linearly to 1 over ``learn()``.
    The IS weights multiply the critic loss only; the actor loss stays unweighted.

    Takes every argument of SB3's ``TD3`` (positional ones included), plus:

    :param alpha: Priority exponent (0 = uniform), >= 0.
    :param beta: Initial IS exponent in [0, 1], annealed to 1.
    :param epsilon: Added to ``|TD|`` so no transition has zero probability, >= 0.
    :param uniform_fraction: Share of each batch drawn uniformly, in [0, 1] (0 = classic PER).
    :param score_floor: Lower clip of the scores, >= 0.
    :param initial_score: ``"max"`` (new transitions get the largest ``|TD|`` seen, as in the paper) or ``"neutral"``.
    :param include_observation: Store small flat observations among the features (unused by PER itself).
    :param eviction: ``"fifo"`` (as SB3) or ``"lowest_score"`` (drop a low-``|TD|`` transition instead of the oldest).
    """

    policy_aliases: ClassVar[dict[str, type[BasePolicy]]] = {
        "MlpPolicy": MlpPolicy,
        "CnnPolicy": CnnPolicy,
        "MultiInputPolicy": MultiInputPolicy,
    }

    def __init__(
        self,
        *args: Any,
        alpha: float = 0.6,
        beta: float = 0.4,
        epsilon: float = 1e-6,
        uniform_fraction: float = 0.0,
        score_floor: float = 0.0,
        initial_score: str = "max",
        include_observation: bool = False,
        eviction: str = "fifo",
        _init_setup_model: bool = True,
        **kwargs: Any,
    ) -> None:
        kwargs["_init_setup_model"] = False  # the knobs below must exist before _setup_model runs
        super().__init__(*args, **kwargs)
        self._init_replay_knobs(
            alpha, beta, epsilon, uniform_fraction, score_floor, initial_score, include_observation, eviction
        )
        if _init_setup_model:
            self._setup_model()
