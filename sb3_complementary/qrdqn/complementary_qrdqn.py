"""ComplementaryQRDQN: sb3-contrib's QRDQN whose replay is run by a co-evolving experience extractor."""

from typing import ClassVar

from sb3_contrib.qrdqn.policies import CnnPolicy, MlpPolicy, MultiInputPolicy
from stable_baselines3.common.policies import BasePolicy

from sb3_complementary.common.replay_algorithm import ComplementaryMixin
from sb3_complementary.qrdqn.weighted_qrdqn import WeightedQRDQN


class ComplementaryQRDQN(ComplementaryMixin, WeightedQRDQN):
    """
    QRDQN with Complementary replay: a small experience extractor scores every stored
    transition, and replay samples by those scores. By default (``contribution="density_ratio"``) the
    extractor classifies the freshest transitions against the whole buffer, and each gradient step
    picks its batch from a uniform pool of four batches by that density ratio times each candidate's
    ``|TD|`` measured now; the other signals are knobs.

    The IS weights multiply each sample's quantile Huber loss.
    (docs/algorithms/distributional.md).

    Drop-in: ``ComplementaryQRDQN("MlpPolicy", env).learn(...)`` works wherever ``QRDQN`` does. It
    takes every argument of sb3-contrib's ``QRDQN`` (positional ones included), plus the keyword knobs of
    :class:`~sb3_complementary.common.replay_algorithm.ComplementaryMixin`
    (the same for every algorithm).
    """

    policy_aliases: ClassVar[dict[str, type[BasePolicy]]] = {
        "MlpPolicy": MlpPolicy,
        "CnnPolicy": CnnPolicy,
        "MultiInputPolicy": MultiInputPolicy,
    }
