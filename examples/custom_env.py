"""
Your own gymnasium env with ComplementaryDQN: define it, check it, train, evaluate.

    python examples/custom_env.py                 # about 30 s on 2 cores
    python examples/custom_env.py --steps 30000

The env is a corridor with a key: the agent must walk left to pick up the key, then right to the
door. Reward is sparse (1 at the door with the key, a small step cost otherwise), so which
transitions get replayed matters: the few that carry the key to the door are the valuable ones.

The same env through the zoo CLI: register it in an importable module and name that module with
``--gym-packages`` (rl-zoo3 imports it before building the env); it has no entry in the packaged
hyperparameter file, so the CLI says so and uses the ``default`` entry, or pass your own file:

    PYTHONPATH=examples sb3-complementary train --algo complementary_dqn --env KeyCorridor-v0 \\
        --gym-packages custom_env -n 15000 -params learning_rate:0.001 learning_starts:1000 gamma:0.98 \\
        gradient_steps:2 target_update_interval:250 exploration_fraction:0.2 buffer_size:20000
"""

import argparse

import gymnasium as gym
import numpy as np
import torch as th
from gymnasium import spaces
from stable_baselines3.common.env_checker import check_env
from stable_baselines3.common.evaluation import evaluate_policy
from stable_baselines3.common.monitor import Monitor

from sb3_complementary import ComplementaryDQN


class KeyCorridorEnv(gym.Env):
    """
    A corridor of ``length`` cells: start in the middle, key at the left end, door at the right end.

    Observation: (position / length, has_key). Actions: 0 = left, 1 = right. Reward: +1 on reaching
    the door with the key (episode ends), -0.01 per step otherwise; episodes are truncated after
    ``max_steps`` steps.
    """

    metadata = {"render_modes": []}

    def __init__(self, length: int = 10, max_steps: int = 60) -> None:
        self.length = length
        self.max_steps = max_steps
        self.observation_space = spaces.Box(low=0.0, high=1.0, shape=(2,), dtype=np.float32)
        self.action_space = spaces.Discrete(2)
        self._position = 0
        self._has_key = False
        self._steps = 0

    def _obs(self) -> np.ndarray:
        return np.array([self._position / (self.length - 1), float(self._has_key)], dtype=np.float32)

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        self._position = self.length // 2
        self._has_key = False
        self._steps = 0
        return self._obs(), {}

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        self._steps += 1
        self._position = int(np.clip(self._position + (1 if action == 1 else -1), 0, self.length - 1))
        if self._position == 0:
            self._has_key = True
        solved = self._has_key and self._position == self.length - 1
        reward = 1.0 if solved else -0.01
        return self._obs(), reward, solved, self._steps >= self.max_steps, {}


# Registered on import, so `--gym-packages custom_env` makes `--env KeyCorridor-v0` known to the zoo CLI.
if "KeyCorridor-v0" not in gym.registry:
    gym.register(id="KeyCorridor-v0", entry_point=KeyCorridorEnv)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=15_000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    th.set_num_threads(1)

    check_env(KeyCorridorEnv())  # SB3's checker: spaces, reset/step signatures, dtypes

    model = ComplementaryDQN(
        "MlpPolicy",
        Monitor(KeyCorridorEnv()),  # or "KeyCorridor-v0", or a VecEnv, as with DQN
        learning_rate=1e-3,
        learning_starts=1_000,
        buffer_size=20_000,
        batch_size=64,
        gamma=0.98,
        train_freq=4,
        gradient_steps=2,
        target_update_interval=250,
        exploration_fraction=0.2,
        policy_kwargs={"net_arch": [64, 64]},
        # The replay knobs, at their defaults since 2026-12-07 (LaBER: fresh |TD| on a pool of 4 batches,
        # down-sampled with its IS correction; no extractor is fitted). For the density-ratio
        # configuration (the default 2026-12-06 to 2026-12-07) pass contribution="density_ratio",
        # epsilon=1e-3, uniform_fraction=0.25, score_floor=0.01.
        contribution="laber",
        alpha=1.0,
        candidate_pool=4,
        uniform_fraction=0.0,
        score_floor=0.0,
        epsilon=1e-6,
        seed=args.seed,
        verbose=0,
    )
    model.learn(args.steps)

    eval_env = KeyCorridorEnv()
    mean, std = evaluate_policy(model, Monitor(eval_env), n_eval_episodes=10, deterministic=True)
    optimum = 1.0 - 0.01 * (eval_env.length // 2 + eval_env.length - 2)  # left to the key, right to the door
    print(f"KeyCorridor-v0 after {args.steps} steps: mean return {mean:.2f} +/- {std:.2f} (optimum {optimum:.2f})")


if __name__ == "__main__":
    main()
