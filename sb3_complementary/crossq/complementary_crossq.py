"""ComplementaryCrossQ: sb3-contrib's CrossQ whose replay is run by a co-evolving experience extractor."""

from typing import ClassVar

from sb3_contrib.crossq.policies import MlpPolicy
from stable_baselines3.common.policies import BasePolicy

from sb3_complementary.common.complementary_mixin import ComplementaryMixin
from sb3_complementary.crossq.policies import MultiInputPolicy
from sb3_complementary.crossq.weighted_crossq import WeightedCrossQ


class ComplementaryCrossQ(ComplementaryMixin, WeightedCrossQ):
    """
    CrossQ with Complementary replay: a small experience extractor scores every stored
    transition, and replay samples by those scores. By default (``contribution="density_ratio"``) the
    extractor classifies the freshest transitions against the whole buffer, and each gradient step
    picks its batch from a uniform pool of four batches by that density ratio times each candidate's
    ``|TD|`` measured now; the other signals are knobs.

    The IS weights multiply each sample's critic loss ``0.5 Σ_c (Q_c(s, a) - y)²``; the actor
    and entropy-coefficient losses stay unweighted. The influence signal is measured on the critic loss at
    the last linear layer of the first critic (docs/algorithms/actor_critic.md).

    Drop-in: ``ComplementaryCrossQ("MlpPolicy", env).learn(...)`` works wherever ``CrossQ`` does.
    ``"MultiInputPolicy"`` (this package's, for ``Dict`` observations and HER) goes beyond it. It
    takes every argument of sb3-contrib's ``CrossQ`` (positional ones included), plus the keyword knobs of
    :class:`~sb3_complementary.common.complementary_mixin.ComplementaryMixin`
    (the same for every algorithm).
    """

    policy_aliases: ClassVar[dict[str, type[BasePolicy]]] = {
        "MlpPolicy": MlpPolicy,
        "MultiInputPolicy": MultiInputPolicy,  # ours: sb3-contrib's CrossQ has none (goal envs, HER)
    }
