"""ComplementaryDQN: SB3 DQN whose replay is run by a co-evolving experience extractor."""

from typing import ClassVar

from stable_baselines3.common.policies import BasePolicy
from stable_baselines3.dqn.policies import CnnPolicy, MlpPolicy, MultiInputPolicy

from sb3_complementary.common.replay_algorithm import ComplementaryMixin
from sb3_complementary.dqn.weighted_dqn import WeightedDQN


class ComplementaryDQN(ComplementaryMixin, WeightedDQN):
    """
    DQN with Complementary replay: a small experience extractor scores every stored
    transition, and replay samples by those scores. By default (``contribution="density_ratio"``) the
    extractor classifies the freshest transitions against the whole buffer, and each gradient step
    picks its batch from a uniform pool of four batches by that density ratio times each candidate's
    ``|TD|`` measured now; the other signals are knobs.

    Idea: Complementary RL (arXiv 2603.17621), mapped onto SB3 in docs/design.md. Drop-in:
    ``ComplementaryDQN("MlpPolicy", env).learn(100_000)`` works wherever ``DQN`` does. It takes
    every argument of SB3's ``DQN`` (positional ones included), plus the keyword knobs of
    :class:`~sb3_complementary.common.replay_algorithm.ComplementaryMixin`
    (the same for every algorithm).
    """

    policy_aliases: ClassVar[dict[str, type[BasePolicy]]] = {
        "MlpPolicy": MlpPolicy,
        "CnnPolicy": CnnPolicy,
        "MultiInputPolicy": MultiInputPolicy,
    }
