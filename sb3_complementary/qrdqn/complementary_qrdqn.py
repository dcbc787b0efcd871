"""ComplementaryQRDQN: sb3-contrib's QRDQN whose replay is run by a co-evolving experience extractor."""

from typing import ClassVar

from sb3_contrib.qrdqn.policies import CnnPolicy, MlpPolicy, MultiInputPolicy
from stable_baselines3.common.policies import BasePolicy

from sb3_complementary.common.replay_algorithm import ComplementaryMixin
from sb3_complementary.qrdqn.weighted_qrdqn import WeightedQRDQN


class ComplementaryQRDQN(ComplementaryMixin, WeightedQRDQN):
    """
    QRDQN with Complementary replay, with ``ComplementaryDQN``'s knobs and defaults. By default
    (``contribution="laber"``: LaBER, Lahire et al. 2022) each gradient step draws a uniform pool of
    four batches, measures each candidate's ``|TD|`` now (of the Q-value the quantiles imply), and
    down-samples its batch in proportion to it, with IS weights that keep a uniform batch's
    gradient; no extractor is fitted. LaBER was measured with DQN, not with QR-DQN.

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
