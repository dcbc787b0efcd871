"""
SB3 callbacks with ComplementaryDQN: EvalCallback and CheckpointCallback, and a schedule of its own.

    python examples/callbacks.py                   # CartPole-v1, 20k steps, about a minute on 2 cores
    python examples/callbacks.py --extractor-every 250

The model here is the density-ratio configuration (``contribution="density_ratio"`` with the other
knobs of the default 2026-12-06 to 2026-12-07), passed explicitly: the default since 2026-12-07,
LaBER, fits no extractor, so there would be nothing for the callback to fit.

No callback is needed for the replay: the model fits its experience extractor every
``extractor_kwargs["train_freq"]`` env steps and re-scores the buffer every
``extractor_kwargs["refresh_interval"]`` (at the end of a rollout), whatever callbacks you pass.
To change the schedule, pass ``extractor_kwargs``; ``fit_extractor()`` and ``refresh_scores()`` are
public, so a callback may also call them itself (``--extractor-every`` shows one that does).

Checkpoints are complete models: ``ComplementaryDQN.load`` restores the extractor and its optimizer
too. Replay buffers are only saved when asked (``save_replay_buffer=True``): they also carry the
transition scores.
"""

import argparse
import sys
from pathlib import Path

import gymnasium as gym
import numpy as np
import torch as th
from stable_baselines3.common.callbacks import BaseCallback, CheckpointCallback, EvalCallback
from stable_baselines3.common.monitor import Monitor

from sb3_complementary import ComplementaryDQN

# The same rl-zoo3 CartPole-v1 entry as the quickstart (run from examples/ or the repo root).
sys.path.insert(0, str(Path(__file__).resolve().parent))
from quickstart import ZOO_CARTPOLE as CARTPOLE

#: The density-ratio configuration (the default 2026-12-06 to 2026-12-07): the knobs that differ from LaBER's.
DENSITY_RATIO = dict(contribution="density_ratio", epsilon=1e-3, uniform_fraction=0.25, score_floor=0.01)


class RescoreEvery(BaseCallback):
    """
    Fit the extractor and re-score the buffer every ``every`` env steps, on top of the model's own schedule.

    A callback only calls the model's public methods: the model owns the extractor and its state.

    :param every: Env steps between two fits.
    """

    def __init__(self, every: int, verbose: int = 0) -> None:
        super().__init__(verbose)
        self.every = every
        self.last = 0

    def _on_rollout_end(self) -> None:
        if self.num_timesteps - self.last >= self.every:
            self.last = self.num_timesteps
            loss = self.model.fit_extractor()  # type: ignore[attr-defined]
            self.model.refresh_scores()  # type: ignore[attr-defined]
            if self.verbose:
                print(f"step {self.num_timesteps}: extractor loss {loss:.4f}")

    def _on_step(self) -> bool:
        return True


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
    callbacks = [eval_callback, checkpoint_callback]
    if args.extractor_every:
        # Fit the extractor more often than the model's schedule (extractor_kwargs["train_freq"], 500).
        callbacks.append(RescoreEvery(args.extractor_every, verbose=1))
    model.learn(args.steps, callback=callbacks)  # the model fits and re-scores on its own schedule too

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
