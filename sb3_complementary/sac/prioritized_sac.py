"""PrioritizedSAC: SB3's SAC with classic proportional prioritized experience replay."""

from typing import ClassVar

from stable_baselines3.common.policies import BasePolicy
from stable_baselines3.sac.policies import CnnPolicy, MlpPolicy, MultiInputPolicy

from sb3_complementary.common.prioritized_mixin import PrioritizedMixin
from sb3_complementary.sac.weighted_sac import WeightedSAC


class PrioritizedSAC(PrioritizedMixin, WeightedSAC):
    """
    SAC with proportional prioritized experience replay (Schaul et al., 2016): the PER baseline
    for ``ComplementarySAC``.

    Transitions are sampled with probability ``∝ (|TD| + epsilon) ** alpha`` through a sum tree,
    where ``|TD|`` is the first critic's ``|Q_1(s, a) - y|``;
    ``beta`` anneals linearly to 1 over ``learn()``.
    The IS weights multiply the critic loss only; the actor loss stays unweighted.

    Takes every argument of SB3's ``SAC`` (positional ones included), plus the keyword knobs of
    :class:`~sb3_complementary.common.prioritized_mixin.PrioritizedMixin`
    (the same for every algorithm), and ``actor_batch``, which batch the actor learns from
    (:class:`~sb3_complementary.common.actor_batch.ActorBatchMixin`).
    """

    policy_aliases: ClassVar[dict[str, type[BasePolicy]]] = {
        "MlpPolicy": MlpPolicy,
        "CnnPolicy": CnnPolicy,
        "MultiInputPolicy": MultiInputPolicy,
    }
