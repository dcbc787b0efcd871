"""ComplementaryTD3: SB3's TD3 whose replay is run by a co-evolving experience extractor."""

from typing import Any, ClassVar

import torch as th
from stable_baselines3.common.buffers import ReplayBuffer
from stable_baselines3.common.noise import ActionNoise
from stable_baselines3.common.policies import BasePolicy
from stable_baselines3.common.type_aliases import GymEnv, Schedule
from stable_baselines3.td3.policies import CnnPolicy, MlpPolicy, MultiInputPolicy, TD3Policy

from sb3_complementary.td3.weighted_td3 import WeightedTD3


class ComplementaryTD3(WeightedTD3):
    """
    TD3 with Complementary replay. By default (``alpha=0``) it draws uniformly, as its parent does, and its
    update is SB3's ``TD3``'s own, bit for bit: no extractor, no sum tree, no ``|TD|`` (why this default:
    docs/algorithms/actor_critic.md).
    ``alpha=1.0`` selects each batch as ``ComplementaryDQN`` does by default (LaBER: a uniform pool of
    ``candidate_pool`` batches, down-sampled in proportion to its fresh ``|TD|``, with IS weights that
    keep a uniform batch's gradient); ``contribution="density_ratio"`` multiplies that ``|TD|`` by the
    experience extractor's density ratio. The IS weights reach the critic loss only
    (docs/algorithms/actor_critic.md).

    Drop-in: ``ComplementaryTD3("MlpPolicy", env).learn(...)`` works wherever ``TD3`` does. It takes every
    argument of SB3's ``TD3`` (positional ones included), then these keyword-only knobs:

    :param contribution: What scores the draws: ``"laber"`` (fresh ``|TD|`` on the pool, with LaBER's IS
        weights ``mean(p) / p_i`` that keep a uniform batch's gradient), ``"fresh_td"`` (fresh ``|TD|``,
        floored at ``score_floor`` and never undone by IS weights) or ``"density_ratio"`` (the
        experience extractor's density ratio times fresh ``|TD|``; with ``candidate_pool=0``, the
        ratio alone from the sum tree). The ``|TD|`` kinds need ``candidate_pool >= 1``.
    :param alpha: Priority exponent, >= 0. 0 draws uniformly, as the parent does, and scores nothing.
    :param epsilon: Added to the scores, >= 0.
    :param uniform_fraction: Share of each batch drawn uniformly, in [0, 1].
    :param score_floor: Minimum score, >= 0 (also the fallback for non-finite scores).
    :param candidate_pool: ``k >= 1``: each gradient step selects its batch from ``k * batch_size``
        uniform candidates, their ``|TD|`` measured now by side-effect-free forward passes (with HER,
        after relabelling). 0: no pool (``density_ratio`` only).
    :param extractor_kwargs: The extractor's settings (network, schedule, fast memory, ratio
        temperature and cap, IS exponent):
        :func:`~sb3_complementary.common.extractor_settings.extractor_settings`. Read only with
        ``contribution="density_ratio"``.
    :param actor_batch: Which batch the actor learns from: ``"shared"`` (the critic's: SB3's update) or
        ``"uniform"`` (a uniform batch of its own, so that only the critic learns from the selection:
        LA3P's split).
    """

    policy_aliases: ClassVar[dict[str, type[BasePolicy]]] = {
        "MlpPolicy": MlpPolicy,
        "CnnPolicy": CnnPolicy,
        "MultiInputPolicy": MultiInputPolicy,
    }

    def __init__(
        self,
        policy: str | type[TD3Policy],
        env: GymEnv | str,
        learning_rate: float | Schedule = 1e-3,
        buffer_size: int = 1_000_000,  # 1e6,
        learning_starts: int = 100,
        batch_size: int = 256,
        tau: float = 0.005,
        gamma: float = 0.99,
        train_freq: int | tuple[int, str] = 1,
        gradient_steps: int = 1,
        action_noise: ActionNoise | None = None,
        replay_buffer_class: type[ReplayBuffer] | None = None,
        replay_buffer_kwargs: dict[str, Any] | None = None,
        optimize_memory_usage: bool = False,
        n_steps: int = 1,
        policy_delay: int = 2,
        target_policy_noise: float = 0.2,
        target_noise_clip: float = 0.5,
        stats_window_size: int = 100,
        tensorboard_log: str | None = None,
        policy_kwargs: dict[str, Any] | None = None,
        verbose: int = 0,
        seed: int | None = None,
        device: th.device | str = "auto",
        _init_setup_model: bool = True,
        *,
        contribution: str = "laber",
        alpha: float = 0.0,
        epsilon: float = 1e-6,
        uniform_fraction: float = 0.0,
        score_floor: float = 0.0,
        candidate_pool: int = 4,
        extractor_kwargs: dict[str, Any] | None = None,
        actor_batch: str = "shared",
    ) -> None:
        super().__init__(
            policy=policy,
            env=env,
            learning_rate=learning_rate,
            buffer_size=buffer_size,
            learning_starts=learning_starts,
            batch_size=batch_size,
            tau=tau,
            gamma=gamma,
            train_freq=train_freq,
            gradient_steps=gradient_steps,
            action_noise=action_noise,
            replay_buffer_class=replay_buffer_class,
            replay_buffer_kwargs=replay_buffer_kwargs,
            optimize_memory_usage=optimize_memory_usage,
            n_steps=n_steps,
            policy_delay=policy_delay,
            target_policy_noise=target_policy_noise,
            target_noise_clip=target_noise_clip,
            stats_window_size=stats_window_size,
            tensorboard_log=tensorboard_log,
            policy_kwargs=policy_kwargs,
            verbose=verbose,
            seed=seed,
            device=device,
            _init_setup_model=False,
        )
        self._init_replay(
            contribution=contribution,
            alpha=alpha,
            epsilon=epsilon,
            uniform_fraction=uniform_fraction,
            score_floor=score_floor,
            candidate_pool=candidate_pool,
            extractor_kwargs=extractor_kwargs,
            actor_batch=actor_batch,
        )
        if _init_setup_model:
            self._setup_model()
