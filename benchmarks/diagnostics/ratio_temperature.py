"""How sharp is the fast/slow density ratio, and which temperature makes it change the draws?

The pilot that set attempt 6's screen knobs (docs/benchmarks/history.md, attempt 6). It trains
ComplementaryDQN with ``contribution="density_ratio"`` (drawn from the sum tree, as attempt 6 ran it
before the candidate pool existed: ``candidate_pool=0``; temperature 1.5, alpha 1) on CartPole-v1
with rl-zoo3's DQN hyperparameters, seed 0, and every 2,500 steps prints the classifier's held-out
ROC AUC and, from the same logits, the ESS fraction of the replay distribution (25% uniform share,
cap 10) that each temperature would give::

    python -m benchmarks.diagnostics.ratio_temperature --gradient-steps 16 --steps 25000
    python -m benchmarks.diagnostics.ratio_temperature --gradient-steps 64 --steps 25000

Output: one JSON line per checkpoint (also written to ``--out``).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import gymnasium as gym
import numpy as np
import torch as th
from stable_baselines3.common.callbacks import BaseCallback

from benchmarks.harness.hyperparams import constructor_kwargs, zoo_hyperparams
from sb3_complementary import ComplementaryDQN
from sb3_complementary.common import density_ratio

TEMPERATURES = (1.0, 1.5, 2.0, 3.0, 5.0)


class Checkpoints(BaseCallback):
    def __init__(self, every: int, out: list[dict]) -> None:
        super().__init__()
        self.every, self.next, self.out = every, every, out

    def _on_step(self) -> bool:
        if self.num_timesteps < self.next:
            return True
        self.next += self.every
        model = self.model
        buffer = model.replay_buffer
        row = {"timestep": self.num_timesteps, "roc_auc": model.extractor_auc}
        if np.isfinite(model.extractor_auc):
            logits = model.extractor.numpy_logits(buffer.ratio_inputs(buffer.valid_indices()))
            for temperature in TEMPERATURES:
                w = density_ratio.ratio_weights(logits, temperature, model.extractor_settings["cap"])
                p = buffer.uniform_fraction / len(w) + (1 - buffer.uniform_fraction) * w / w.sum()
                row[f"ess_T{temperature:g}"] = float(1 / (len(w) * np.sum(p**2)))
        print(json.dumps(row), flush=True)
        self.out.append(row)
        return True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gradient-steps", type=int, default=64)
    parser.add_argument("--steps", type=int, default=25_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    th.set_num_threads(1)
    model = ComplementaryDQN(
        "MlpPolicy",
        gym.make("CartPole-v1"),
        seed=args.seed,
        contribution="density_ratio",
        alpha=1.0,
        candidate_pool=0,
        extractor_kwargs={"temperature": 1.5, "gradient_steps": args.gradient_steps},
        **constructor_kwargs(zoo_hyperparams("CartPole-v1")),
    )
    rows: list[dict] = []
    model.learn(args.steps, callback=Checkpoints(2500, rows))
    if args.out:
        args.out.write_text("\n".join(json.dumps(r) for r in rows) + "\n")


if __name__ == "__main__":
    main()
