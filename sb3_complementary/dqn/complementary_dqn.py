"""ComplementaryDQN: SB3 DQN whose replay is run by a co-evolving experience extractor."""

from typing import ClassVar

from stable_baselines3.common.policies import BasePolicy
from stable_baselines3.dqn.policies import CnnPolicy, MlpPolicy, MultiInputPolicy

from sb3_complementary.common.replay_algorithm import ComplementaryMixin
from sb3_complementary.dqn.weighted_dqn import WeightedDQN


class ComplementaryDQN(ComplementaryMixin, WeightedDQN):
    """
    DQN with Complementary replay. By default (``contribution="laber"``: LaBER, Lahire et al. 2022)
    each gradient step draws a uniform pool of four batches, measures each candidate's ``|TD|`` now,
    and down-samples its batch in proportion to it, with IS weights that keep a uniform batch's
    gradient; no extractor is fitted. It is the one configuration its 10-seed study measured not
    worse than DQN on every entry, with no gain (docs/results/study_laber.md). With
    ``contribution="density_ratio"`` a small experience extractor, a classifier of the freshest
    transitions against the whole buffer, multiplies fresh ``|TD|`` by its density ratio.

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
