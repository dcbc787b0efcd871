"""ComplementaryDDPG: SB3's DDPG whose replay is run by a co-evolving experience extractor."""

from typing import ClassVar

from stable_baselines3 import DDPG
from stable_baselines3.common.policies import BasePolicy
from stable_baselines3.td3.policies import CnnPolicy, MlpPolicy, MultiInputPolicy

from sb3_complementary.common.actor_critic_defaults import ActorCriticComplementaryMixin
from sb3_complementary.td3.weighted_td3 import WeightedTD3


class ComplementaryDDPG(ActorCriticComplementaryMixin, WeightedTD3, DDPG):
    """
    DDPG with Complementary replay: a small experience extractor scores every stored
    transition. By default (``contribution="density_ratio"``, ``alpha=0``, ``candidate_pool=0``) the
    extractor classifies the freshest transitions against the whole buffer and logs its ratio, but
    the draws stay uniform: the DQN family's selection (``alpha=1.0, candidate_pool=4``) fell far
    below SAC on LunarLanderContinuous-v3 (see
    :class:`~sb3_complementary.common.actor_critic_defaults.ActorCriticComplementaryMixin`).

    DDPG is SB3's TD3 with one critic, no target smoothing and no policy delay, so it shares
    ``WeightedTD3``'s train step: the IS weights multiply each sample's critic loss ``(Q(s, a) - y)²``, the
    actor loss stays unweighted
    (docs/algorithms/actor_critic.md).

    Drop-in: ``ComplementaryDDPG("MlpPolicy", env).learn(...)`` works wherever ``DDPG`` does. It
    takes every argument of SB3's ``DDPG`` (positional ones included), plus the keyword knobs of
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
