"""ComplementaryTQC: sb3-contrib's TQC whose replay is run by a co-evolving experience extractor."""

from typing import ClassVar

from sb3_contrib.tqc.policies import CnnPolicy, MlpPolicy, MultiInputPolicy
from stable_baselines3.common.policies import BasePolicy

from sb3_complementary.common.actor_critic_defaults import ActorCriticComplementaryMixin
from sb3_complementary.tqc.weighted_tqc import WeightedTQC


class ComplementaryTQC(ActorCriticComplementaryMixin, WeightedTQC):
    """
    TQC with Complementary replay: a small experience extractor scores every stored
    transition. By default (``contribution="density_ratio"``, ``alpha=0``, ``candidate_pool=0``) the
    extractor classifies the freshest transitions against the whole buffer and logs its ratio, but
    the draws stay uniform: the DQN family's selection (``alpha=1.0, candidate_pool=4``) fell far
    below SAC on LunarLanderContinuous-v3 (see
    :class:`~sb3_complementary.common.actor_critic_defaults.ActorCriticComplementaryMixin`).

    The IS weights multiply each sample's quantile Huber critic loss (against the truncated
    target mixture); the actor and entropy-coefficient losses stay unweighted.
    (docs/algorithms/distributional.md).

    Drop-in: ``ComplementaryTQC("MlpPolicy", env).learn(...)`` works wherever ``TQC`` does. It
    takes every argument of sb3-contrib's ``TQC`` (positional ones included), plus the keyword knobs of
    :class:`~sb3_complementary.common.replay_algorithm.ComplementaryMixin`
    (the same for every algorithm; the actor-critic defaults differ in ``alpha`` and ``candidate_pool``),
    and ``actor_batch``, which batch the actor learns from
    (:class:`~sb3_complementary.common.actor_batch.ActorBatchMixin`).
    """

    policy_aliases: ClassVar[dict[str, type[BasePolicy]]] = {
        "MlpPolicy": MlpPolicy,
        "CnnPolicy": CnnPolicy,
        "MultiInputPolicy": MultiInputPolicy,
    }
