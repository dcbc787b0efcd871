"""
TensorBoard: what the replay logs under ``complementary/``, from two short real runs on CartPole-v1.

    python examples/tensorboard_run.py                   # 30k steps each, a few minutes on one core
    tensorboard --logdir logs/tensorboard-example         # then open the SCALARS tab, filter "complementary"

Two ComplementaryDQN runs with rl-zoo3's CartPole-v1 hyperparameters and the same seed: the
``td`` signal (the default until 2026-12-05, a learned PER whose draws stay close to uniform) and the
density ratio without a candidate pool (a classifier of the freshest transitions against the whole
buffer, which moves the draws and logs its held-out ROC AUC). Both pin the knobs they ran with when
the docs' figure was made. The docs' TensorBoard page
(``docs/tensorboard.md``) shows these runs' curves and explains each metric.
"""

import argparse
import sys
from pathlib import Path

import torch as th

from sb3_complementary import ComplementaryDQN

# The same rl-zoo3 CartPole-v1 entry as the quickstart (run from examples/ or the repo root).
sys.path.insert(0, str(Path(__file__).resolve().parent))
from quickstart import ZOO_CARTPOLE as CARTPOLE

#: The defaults of 2026-12-05 (the figure's), under each run's signal.
_FIGURE_KNOBS = dict(alpha=0.6, initial_score="max", extractor_gradient_steps=16, candidate_pool=0)
RUNS = {
    "td_default": dict(contribution="td", **_FIGURE_KNOBS),
    "density_ratio": dict(contribution="density_ratio", **_FIGURE_KNOBS),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=30_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--logdir", type=Path, default=Path("logs/tensorboard-example"))
    parser.add_argument("--runs", nargs="+", choices=sorted(RUNS), default=list(RUNS))
    args = parser.parse_args()
    th.set_num_threads(1)

    for name in args.runs:
        model = ComplementaryDQN(
            "MlpPolicy", "CartPole-v1", seed=args.seed, tensorboard_log=str(args.logdir), **CARTPOLE, **RUNS[name]
        )
        # tb_log_name names the run's folder: logs/tensorboard-example/<name>_1/events.out.tfevents...
        model.learn(args.steps, tb_log_name=name, log_interval=4)
        print(f"{name}: {model.replay_diagnostics()}", flush=True)


if __name__ == "__main__":
    main()
