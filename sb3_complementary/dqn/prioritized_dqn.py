"""PrioritizedDQN: SB3 DQN with classic proportional prioritized experience replay."""

from typing import ClassVar

from stable_baselines3.common.policies import BasePolicy
from stable_baselines3.dqn.policies import CnnPolicy, MlpPolicy, MultiInputPolicy

from sb3_complementary.common.prioritized_mixin import PrioritizedMixin
from sb3_complementary.dqn.weighted_dqn import WeightedDQN


class PrioritizedDQN(PrioritizedMixin, WeightedDQN):
    """
    DQN with proportional prioritized experience replay (Schaul et al., 2016).

    Paper: https://arxiv.org/abs/1511.05952. SB3 ships no prioritized replay (SB3 issue #1242);
    this is the fair baseline for ``ComplementaryDQN``. Transitions are sampled with probability
    ``∝ (|TD| + epsilon) ** alpha`` through a sum tree, the per-sample Huber loss is weighted by
    ``(N * P(i)) ** -beta / max``, and ``beta`` anneals linearly to 1 over ``learn()``.

    Takes every argument of SB3's ``DQN`` (positional ones included), plus the keyword knobs of
    :class:`~sb3_complementary.common.prioritized_mixin.PrioritizedMixin`
    (the same for every algorithm).
    """

    policy_aliases: ClassVar[dict[str, type[BasePolicy]]] = {
        "MlpPolicy": MlpPolicy,
        "CnnPolicy": CnnPolicy,
        "MultiInputPolicy": MultiInputPolicy,
    }
