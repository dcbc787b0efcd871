"""
SB3 callbacks with ComplementaryDQN: EvalCallback and CheckpointCallback next to the extractor's callback.

    python examples/callbacks.py                   # CartPole-v1, 20k steps, about a minute on 2 cores
    python examples/callbacks.py --own-extractor-callback

``learn()`` appends an ``ExtractorTrainingCallback`` (fits the experience extractor and re-scores the
buffer at rollout ends) to whatever callbacks you pass: a list, a ``CallbackList``, one callback or
a function. Pass your own ``ExtractorTrainingCallback`` among them instead to set its arguments
(they override the model's knobs of the same name); then none is added.

Checkpoints are complete models: ``ComplementaryDQN.load`` restores the extractor and its optimizer
too. Replay buffers are only saved when asked (``save_replay_buffer=True``): they also carry the
transition scores and features.
"""

import argparse
import sys
from pathlib import Path

import gymnasium as gym
import numpy as np
import torch as th
from stable_baselines3.common.callbacks import CheckpointCallback, EvalCallback
from stable_baselines3.common.monitor import Monitor

from sb3_complementary import ComplementaryDQN, ExtractorTrainingCallback

# The same rl-zoo3 CartPole-v1 entry as the quickstart (run from examples/ or the repo root).
sys.path.insert(0, str(Path(__file__).resolve().parent))
from quickstart import ZOO_CARTPOLE as CARTPOLE


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=20_000)
    parser.add_argument("--out", type=Path, default=Path("logs/callbacks-example"))
    parser.add_argument("--own-extractor-callback", action="store_true", help="pass an ExtractorTrainingCallback")
    args = parser.parse_args()
    th.set_num_threads(1)

    model = ComplementaryDQN("MlpPolicy", "CartPole-v1", seed=0, **CARTPOLE)

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
    callbacks = [eval_callback, checkpoint_callback]
    if args.own_extractor_callback:
        # Fit the extractor every 250 steps instead of the model's extractor_train_freq (500).
        callbacks.append(ExtractorTrainingCallback(extractor_train_freq=250, verbose=1))
    model.learn(args.steps, callback=callbacks)  # the ExtractorTrainingCallback is added here unless given

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
    restored.learn(1_000, reset_num_timesteps=False)  # continues, with a fresh automatic extractor callback


if __name__ == "__main__":
    main()
