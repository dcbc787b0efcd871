"""ComplementaryDDPG: SB3's DDPG whose replay is run by a co-evolving experience extractor."""

from typing import ClassVar

from stable_baselines3 import DDPG
from stable_baselines3.common.policies import BasePolicy
from stable_baselines3.td3.policies import CnnPolicy, MlpPolicy, MultiInputPolicy

from sb3_complementary.common.complementary_mixin import ComplementaryMixin
from sb3_complementary.td3.weighted_td3 import WeightedTD3


class ComplementaryDDPG(ComplementaryMixin, WeightedTD3, DDPG):
    """
    DDPG with Complementary replay: a small experience extractor scores every stored
    transition, and replay samples by those scores. By default (``contribution="density_ratio"``) the
    extractor classifies the freshest transitions against the whole buffer, and each gradient step
    picks its batch from a uniform pool of four batches by that density ratio times each candidate's
    ``|TD|`` measured now; the other signals are knobs.

    DDPG is SB3's TD3 with one critic, no target smoothing and no policy delay, so it shares
    ``WeightedTD3``'s train step: the IS weights multiply each sample's critic loss ``(Q(s, a) - y)²``, the
    actor loss stays unweighted, and the influence signal is measured on the critic loss at the critic's
    last linear layer (docs/algorithms/actor_critic.md).

    Drop-in: ``ComplementaryDDPG("MlpPolicy", env).learn(...)`` works wherever ``DDPG`` does. It
    takes every argument of SB3's ``DDPG`` (positional ones included), plus the keyword knobs of
    :class:`~sb3_complementary.common.complementary_mixin.ComplementaryMixin`
    (the same for every algorithm).
    """

    policy_aliases: ClassVar[dict[str, type[BasePolicy]]] = {
        "MlpPolicy": MlpPolicy,
        "CnnPolicy": CnnPolicy,
        "MultiInputPolicy": MultiInputPolicy,
    }
