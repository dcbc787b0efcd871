"""
TensorBoard: what the replay logs under ``complementary/``, from two short real runs on CartPole-v1.

    python examples/tensorboard_run.py                   # 30k steps each, a few minutes on one core
    tensorboard --logdir logs/tensorboard-example         # then open the SCALARS tab, filter "complementary"

Two ComplementaryDQN runs with rl-zoo3's CartPole-v1 hyperparameters and the same seed:

- ``default``: LaBER (fresh ``|TD|`` on a candidate pool of 4, down-sampled in proportion, with
  LaBER's IS weights). It builds no extractor, so it logs only its IS weights (with ``beta`` 1).
- ``density_ratio``: the density ratio drawing from the sum tree without a pool (a classifier of
  the freshest transitions against the whole buffer, which moves the draws and logs its held-out
  ROC AUC and loss). The default fits no extractor, so this run passes
  ``contribution="density_ratio"`` explicitly, with the other knobs of the density-ratio
  configuration; its re-scores log the replay's diagnostics (``ess_fraction``, the weight range,
  the scores by age quartile).

The figure of ``docs/tensorboard.md`` was made by an earlier version of the package, with a signal
that is removed since (docs/changelog.md).
"""

import argparse
import sys
from pathlib import Path

import torch as th

from sb3_complementary import ComplementaryDQN

# The same rl-zoo3 CartPole-v1 entry as the quickstart (run from examples/ or the repo root).
sys.path.insert(0, str(Path(__file__).resolve().parent))
from quickstart import ZOO_CARTPOLE as CARTPOLE

#: The density-ratio configuration (the default 2026-12-06 to 2026-12-07): the knobs that differ from LaBER's.
DENSITY_RATIO = dict(contribution="density_ratio", epsilon=1e-3, uniform_fraction=0.25, score_floor=0.01)

RUNS = {
    "default": {},  # LaBER: no extractor is fitted
    # The extractor's metrics need it fitted: the sum tree, by the scores of the last re-score.
    "density_ratio": dict(DENSITY_RATIO, alpha=0.6, candidate_pool=0),
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
