"""PrioritizedTD3: SB3's TD3 with classic proportional prioritized experience replay."""

from typing import Any, ClassVar

import torch as th
from stable_baselines3.common.buffers import ReplayBuffer
from stable_baselines3.common.noise import ActionNoise
from stable_baselines3.common.policies import BasePolicy
from stable_baselines3.common.type_aliases import GymEnv, Schedule
from stable_baselines3.td3.policies import CnnPolicy, MlpPolicy, MultiInputPolicy, TD3Policy

from sb3_complementary.td3.weighted_td3 import WeightedTD3


class PrioritizedTD3(WeightedTD3):
    """
    TD3 with proportional prioritized experience replay (Schaul et al., 2016): the PER baseline.
    Transitions are drawn with probability ``∝ (|TD| + epsilon) ** alpha`` through a sum tree, each
    sample's loss is weighted by ``(N * P(i)) ** -beta / max``, and ``beta`` anneals linearly to 1
    over ``learn()``. The IS weights reach the critic loss only.

    Drop-in: ``PrioritizedTD3("MlpPolicy", env).learn(...)`` works wherever ``TD3`` does. It takes every
    argument of SB3's ``TD3`` (positional ones included), then these keyword-only knobs:

    :param alpha: Priority exponent, >= 0 (0 = uniform, the parent's draw).
    :param beta: Initial IS exponent in [0, 1], annealed linearly to 1 over ``learn()``.
    :param epsilon: Added to ``|TD|`` so no transition has zero probability, >= 0.
    :param uniform_fraction: Share of each batch drawn uniformly, in [0, 1] (0 = classic PER).
    :param score_floor: Lower clip of the scores, >= 0.
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
        alpha: float = 0.6,
        beta: float = 0.4,
        epsilon: float = 1e-6,
        uniform_fraction: float = 0.0,
        score_floor: float = 0.0,
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
            contribution="per",
            alpha=alpha,
            epsilon=epsilon,
            uniform_fraction=uniform_fraction,
            score_floor=score_floor,
            beta=beta,
            actor_batch=actor_batch,
        )
        if _init_setup_model:
            self._setup_model()
