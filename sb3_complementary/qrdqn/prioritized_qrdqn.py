"""PrioritizedQRDQN: sb3-contrib's QRDQN with classic proportional prioritized experience replay."""

from typing import ClassVar

from sb3_contrib.qrdqn.policies import CnnPolicy, MlpPolicy, MultiInputPolicy
from stable_baselines3.common.policies import BasePolicy

from sb3_complementary.common.prioritized_mixin import PrioritizedMixin
from sb3_complementary.qrdqn.weighted_qrdqn import WeightedQRDQN


class PrioritizedQRDQN(PrioritizedMixin, WeightedQRDQN):
    """
    QRDQN with proportional prioritized experience replay (Schaul et al., 2016): the PER baseline
    for ``ComplementaryQRDQN``.

    Transitions are sampled with probability ``∝ (|TD| + epsilon) ** alpha`` through a sum tree,
    where ``|TD|`` is ``|mean(target quantiles) - mean(taken action's quantiles)|``;
    ``beta`` anneals linearly to 1 over ``learn()``.
    The IS weights multiply each sample's quantile Huber loss.

    Takes every argument of sb3-contrib's ``QRDQN`` (positional ones included), plus the keyword knobs of
    :class:`~sb3_complementary.common.prioritized_mixin.PrioritizedMixin`
    (the same for every algorithm).
    """

    policy_aliases: ClassVar[dict[str, type[BasePolicy]]] = {
        "MlpPolicy": MlpPolicy,
        "CnnPolicy": CnnPolicy,
        "MultiInputPolicy": MultiInputPolicy,
    }
