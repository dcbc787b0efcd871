"""ComplementaryCrossQ: sb3-contrib's CrossQ whose replay is run by a co-evolving experience extractor."""

from typing import ClassVar

from sb3_contrib.crossq.policies import MlpPolicy
from stable_baselines3.common.policies import BasePolicy

from sb3_complementary.common.actor_critic_defaults import ActorCriticComplementaryMixin
from sb3_complementary.crossq.policies import MultiInputPolicy
from sb3_complementary.crossq.weighted_crossq import WeightedCrossQ


class ComplementaryCrossQ(ActorCriticComplementaryMixin, WeightedCrossQ):
    """
    CrossQ with Complementary replay: a small experience extractor scores every stored
    transition. By default (``contribution="density_ratio"``, ``alpha=0``, ``candidate_pool=0``) the
    extractor classifies the freshest transitions against the whole buffer and logs its ratio, but
    the draws stay uniform: the DQN family's selection (``alpha=1.0, candidate_pool=4``) fell far
    below SAC on LunarLanderContinuous-v3 (see
    :class:`~sb3_complementary.common.actor_critic_defaults.ActorCriticComplementaryMixin`).

    The IS weights multiply each sample's critic loss ``0.5 Σ_c (Q_c(s, a) - y)²``; the actor
    and entropy-coefficient losses stay unweighted.
    (docs/algorithms/actor_critic.md).

    Drop-in: ``ComplementaryCrossQ("MlpPolicy", env).learn(...)`` works wherever ``CrossQ`` does.
    ``"MultiInputPolicy"`` (this package's, for ``Dict`` observations and HER) goes beyond it. It
    takes every argument of sb3-contrib's ``CrossQ`` (positional ones included), plus the keyword knobs of
    :class:`~sb3_complementary.common.replay_algorithm.ComplementaryMixin`
    (the same for every algorithm; the actor-critic defaults differ in ``alpha`` and ``candidate_pool``),
    and ``actor_batch``, which batch the actor learns from
    (:class:`~sb3_complementary.common.actor_batch.ActorBatchMixin`).
    """

    policy_aliases: ClassVar[dict[str, type[BasePolicy]]] = {
        "MlpPolicy": MlpPolicy,
        "MultiInputPolicy": MultiInputPolicy,  # ours: sb3-contrib's CrossQ has none (goal envs, HER)
    }
