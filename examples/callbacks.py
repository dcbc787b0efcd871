"""
SB3 callbacks with ComplementaryDQN: EvalCallback and CheckpointCallback, and the extractor's own schedule.

    python examples/callbacks.py                   # CartPole-v1, 20k steps, about a minute on 2 cores
    python examples/callbacks.py --extractor-every 250

The model here is the density-ratio configuration (``contribution="density_ratio"`` with the knobs
of :data:`DENSITY_RATIO`), passed explicitly: the default, LaBER, builds no extractor.

``learn()`` adds an ``ExtractorTrainingCallback`` with the schedule of ``extractor_kwargs`` (fit every
``train_freq`` env steps, re-score the buffer every ``refresh_interval``, at the end of a rollout),
beside whatever callbacks you pass. To run the schedule another way, pass your own
``ExtractorTrainingCallback`` (``--extractor-every`` does): it replaces the default one.

Checkpoints are complete models: ``ComplementaryDQN.load`` restores the extractor, its optimizer and
its schedule. Replay buffers are only saved when asked (``save_replay_buffer=True``): they also carry
the transition scores.
"""

import argparse
import sys
from pathlib import Path

import gymnasium as gym
import numpy as np
import torch as th
from stable_baselines3.common.callbacks import BaseCallback, CheckpointCallback, EvalCallback
from stable_baselines3.common.monitor import Monitor

from sb3_complementary import ComplementaryDQN, ExtractorTrainingCallback

# The same rl-zoo3 CartPole-v1 entry as the quickstart (run from examples/ or the repo root).
sys.path.insert(0, str(Path(__file__).resolve().parent))
from quickstart import ZOO_CARTPOLE as CARTPOLE

#: The density-ratio configuration: the knobs that differ from LaBER's.
DENSITY_RATIO = dict(contribution="density_ratio", epsilon=1e-3, uniform_fraction=0.25, score_floor=0.01)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=20_000)
    parser.add_argument("--out", type=Path, default=Path("logs/callbacks-example"))
    parser.add_argument("--extractor-every", type=int, default=0, help="also fit and re-score every N steps")
    args = parser.parse_args()
    th.set_num_threads(1)

    # The extractor is fitted only with contribution="density_ratio": the default (LaBER) fits none.
    model = ComplementaryDQN("MlpPolicy", "CartPole-v1", seed=0, **CARTPOLE, **DENSITY_RATIO)

    eval_callback = EvalCallback(
        Monitor(gym.make("CartPole-v1")),
        eval_freq=max(args.steps // 4, 1),
        n_eval_episodes=5,
        best_model_save_path=str(args.out / "best"),
        log_path=str(args.out / "eval"),
        deterministic=True,
    )
    checkpoint_callback = CheckpointCallback(
        save_freq=max(args.steps // 2, 1),
        save_path=str(args.out / "checkpoints"),
        name_prefix="cdqn",
        save_replay_buffer=True,
    )
    callbacks: list[BaseCallback] = [eval_callback, checkpoint_callback]
    if args.extractor_every:  # another schedule than extractor_kwargs' (fit every 500, re-score every 1,000)
        every = args.extractor_every
        callbacks.append(ExtractorTrainingCallback(train_freq=every, refresh_interval=every, verbose=1))
    model.learn(args.steps, callback=callbacks)  # without one of yours, learn() adds the default schedule

    evaluations = np.load(args.out / "eval" / "evaluations.npz")
    returns = {int(t): float(r.mean()) for t, r in zip(evaluations["timesteps"], evaluations["results"], strict=True)}
    print("evaluations (step: mean return):", returns)
    checkpoints = sorted((args.out / "checkpoints").glob("cdqn_*_steps.zip"), key=lambda p: int(p.stem.split("_")[1]))
    print("checkpoints:", [path.name for path in checkpoints])

    last = checkpoints[-1]
    restored = ComplementaryDQN.load(last)  # model, extractor and its optimizer
    restored.load_replay_buffer(last.with_name(last.name.replace("cdqn_", "cdqn_replay_buffer_")).with_suffix(".pkl"))
    print(f"restored {last.name}: {restored.replay_buffer.size()} transitions with their scores")
    restored.set_env(model.get_env())
    restored.learn(1_000, reset_num_timesteps=False)  # continues, its extractor schedule where it left off


if __name__ == "__main__":
    main()
