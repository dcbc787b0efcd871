"""
Quickstart: train ComplementaryDQN and SB3's DQN on CartPole-v1, then print both evaluations and
save their learning curves.

    python examples/quickstart.py               # 50k steps each, rl-zoo3's tuned DQN hyperparameters
    python examples/quickstart.py --steps 20000

Both agents get the same seed and the same hyperparameters; only the replay differs. Training
shows SB3's progress bar; the learning curves (training-episode returns, as each agent's SB3
``Monitor`` recorded them) are saved as ``<out>/learning_curves.png``.
"""

import argparse
import time
from pathlib import Path

import gymnasium as gym
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import torch as th
from stable_baselines3 import DQN
from stable_baselines3.common.evaluation import evaluate_policy
from stable_baselines3.common.monitor import Monitor

from sb3_complementary import ComplementaryDQN

#: rl-zoo3 hyperparams/dqn.yml, CartPole-v1 entry (n_timesteps 5e4).
ZOO_CARTPOLE = dict(
    learning_rate=2.3e-3,
    batch_size=64,
    buffer_size=100_000,
    learning_starts=1000,
    gamma=0.99,
    target_update_interval=10,
    train_freq=256,
    gradient_steps=128,
    exploration_fraction=0.16,
    exploration_final_eps=0.04,
    policy_kwargs=dict(net_arch=[256, 256]),
)


def plot_learning_curves(monitors: dict[str, Monitor], path: Path, window: int = 20) -> Path:
    """Each agent's training-episode returns against env steps, as a rolling mean over ``window`` episodes."""
    figure, axis = plt.subplots(figsize=(7, 4))
    for name, monitor in monitors.items():
        returns = np.asarray(monitor.get_episode_rewards())
        steps = np.cumsum(monitor.get_episode_lengths())
        width = min(window, len(returns))
        smoothed = np.convolve(returns, np.ones(width) / width, mode="valid")
        axis.plot(steps[width - 1 :], smoothed, label=name)
    axis.set_xlabel("environment steps")
    axis.set_ylabel(f"training episode return (mean of {window})")
    axis.set_title("CartPole-v1")
    axis.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=50_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--eval-episodes", type=int, default=20)
    parser.add_argument("--out", type=Path, default=Path("quickstart-output"), help="folder of the learning-curve PNG")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar (for logs)")
    args = parser.parse_args()
    th.set_num_threads(1)

    rows, monitors = [], {}
    args.out.mkdir(parents=True, exist_ok=True)
    for algo in (DQN, ComplementaryDQN):
        monitors[algo.__name__] = env = Monitor(gym.make("CartPole-v1"))
        model = algo("MlpPolicy", env, seed=args.seed, **ZOO_CARTPOLE)
        print(f"training {algo.__name__} for {args.steps} steps", flush=True)
        start = time.perf_counter()
        model.learn(args.steps, progress_bar=not args.no_progress)
        seconds = time.perf_counter() - start
        eval_env = Monitor(gym.make("CartPole-v1"))
        eval_env.reset(seed=10_000 + args.seed)
        mean, std = evaluate_policy(model, eval_env, n_eval_episodes=args.eval_episodes, deterministic=True)
        rows.append((algo.__name__, mean, std, seconds))
        print(f"{algo.__name__:>18}: trained {args.steps} steps in {seconds:.0f}s", flush=True)

    print(f"\nCartPole-v1, seed {args.seed}, {args.steps} steps, {args.eval_episodes} deterministic eval episodes")
    print(f"{'algorithm':>18} | {'mean return':>11} | {'std':>6} | {'train s':>7}")
    for name, mean, std, seconds in rows:
        print(f"{name:>18} | {mean:11.1f} | {std:6.1f} | {seconds:7.0f}")
    print(
        "One seed is an anecdote. Over 10 seeds the default (LaBER) is level with DQN: 1.03x its IQM AUC on the\n"
        "classic suite, 0.99x on tasks that change, and 0.88x its mean on CartPole-v1: docs/results/study_laber.md."
    )
    print(f"Learning curves: {plot_learning_curves(monitors, args.out / 'learning_curves.png')}")


if __name__ == "__main__":
    main()
