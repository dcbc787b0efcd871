"""PrioritizedDQN: SB3 DQN with classic proportional prioritized experience replay."""

from typing import Any, ClassVar

import torch as th
from stable_baselines3.common.buffers import ReplayBuffer
from stable_baselines3.common.policies import BasePolicy
from stable_baselines3.common.type_aliases import GymEnv, Schedule
from stable_baselines3.dqn.policies import CnnPolicy, DQNPolicy, MlpPolicy, MultiInputPolicy

from sb3_complementary.dqn.weighted_dqn import WeightedDQN


class PrioritizedDQN(WeightedDQN):
    """
    DQN with proportional prioritized experience replay (Schaul et al., 2016): the PER baseline.
    Transitions are drawn with probability ``∝ (|TD| + epsilon) ** alpha`` through a sum tree, each
    sample's loss is weighted by ``(N * P(i)) ** -beta / max``, and ``beta`` anneals linearly to 1
    over ``learn()``.

    Drop-in: ``PrioritizedDQN("MlpPolicy", env).learn(...)`` works wherever ``DQN`` does. It takes every
    argument of SB3's ``DQN`` (positional ones included), then these keyword-only knobs:

    :param alpha: Priority exponent, >= 0 (0 = uniform, the parent's draw).
    :param beta: Initial IS exponent in [0, 1], annealed linearly to 1 over ``learn()``.
    :param epsilon: Added to ``|TD|`` so no transition has zero probability, >= 0.
    :param uniform_fraction: Share of each batch drawn uniformly, in [0, 1] (0 = classic PER).
    :param score_floor: Lower clip of the scores, >= 0.
    """

    policy_aliases: ClassVar[dict[str, type[BasePolicy]]] = {
        "MlpPolicy": MlpPolicy,
        "CnnPolicy": CnnPolicy,
        "MultiInputPolicy": MultiInputPolicy,
    }

    def __init__(
        self,
        policy: str | type[DQNPolicy],
        env: GymEnv | str,
        learning_rate: float | Schedule = 1e-4,
        buffer_size: int = 1_000_000,  # 1e6,
        learning_starts: int = 100,
        batch_size: int = 32,
        tau: float = 1.0,
        gamma: float = 0.99,
        train_freq: int | tuple[int, str] = 4,
        gradient_steps: int = 1,
        replay_buffer_class: type[ReplayBuffer] | None = None,
        replay_buffer_kwargs: dict[str, Any] | None = None,
        optimize_memory_usage: bool = False,
        n_steps: int = 1,
        target_update_interval: int = 10000,
        exploration_fraction: float = 0.1,
        exploration_initial_eps: float = 1.0,
        exploration_final_eps: float = 0.05,
        max_grad_norm: float = 10,
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
            replay_buffer_class=replay_buffer_class,
            replay_buffer_kwargs=replay_buffer_kwargs,
            optimize_memory_usage=optimize_memory_usage,
            n_steps=n_steps,
            target_update_interval=target_update_interval,
            exploration_fraction=exploration_fraction,
            exploration_initial_eps=exploration_initial_eps,
            exploration_final_eps=exploration_final_eps,
            max_grad_norm=max_grad_norm,
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
        )
        if _init_setup_model:
            self._setup_model()
