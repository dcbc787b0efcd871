"""
Is the learned replay distribution informative? Train one seed with the study's zoo hyperparameters
and print, at five points, how far the sampling distribution is from uniform and how well the
experience extractor predicts the labels it is fitted on.

    python docs/benchmarks/diagnostics/score_spread.py CartPole-v1 25000
    python docs/benchmarks/diagnostics/score_spread.py CartPole-v1 25000 --kwargs "{'contribution': 'td'}"
    python docs/benchmarks/diagnostics/score_spread.py CartPole-v1 25000 --algo per

Columns: ``ess`` is the ESS fraction of the sampling distribution (1 = uniform replay); the score
percentiles are over the stored transitions; ``label_auc`` is the extractor's ROC AUC on its own
label store (in-sample: an upper bound on how well it separates helpful from unhelpful labels,
0.5 = no better than chance; labels in [0, 1] are split at 0.5).
"""

import argparse
import ast

import gymnasium as gym
import numpy as np
import torch as th
from scipy.stats import mannwhitneyu
from stable_baselines3.common.callbacks import BaseCallback

from sb3_complementary import ComplementaryDQN, PrioritizedDQN
from sb3_complementary.benchmark.hyperparams import constructor_kwargs, zoo_hyperparams


def label_auc(model: ComplementaryDQN) -> float:
    """In-sample ROC AUC of the extractor on its label store (Mann-Whitney U / (n+ n-))."""
    store = model.label_store
    n = len(store)
    positive = store.labels[:n] > 0.5
    if n < 500 or positive.all() or not positive.any():
        return float("nan")
    with th.no_grad():
        predicted = model.extractor(th.as_tensor(store.features[:n])).numpy()
    u = mannwhitneyu(predicted[positive], predicted[~positive]).statistic
    return float(u / (positive.sum() * (~positive).sum()))


class Report(BaseCallback):
    def __init__(self, every: int) -> None:
        super().__init__()
        self.every = every

    def _on_step(self) -> bool:
        if self.num_timesteps % self.every:
            return True
        buffer = self.model.replay_buffer
        indices = buffer.valid_indices()
        scores = buffer.scores[indices]
        line = f"{self.num_timesteps:>7}  ess {buffer.ess_fraction(indices):.3f}"
        line += f"  score p5/p50/p95 {np.percentile(scores, [5, 50, 95]).round(3).tolist()}"
        if isinstance(self.model, ComplementaryDQN):
            positive = self.model.label_store.positive_share()
            line += f"  positive labels {positive:.3f}  label_auc {label_auc(self.model):.3f}"
        print(line, flush=True)
        return True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("env_id")
    parser.add_argument("steps", type=int)
    parser.add_argument("--algo", choices=("complementary", "per"), default="complementary")
    parser.add_argument("--kwargs", default="{}", help="extra constructor kwargs, a Python dict literal")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    th.set_num_threads(1)
    hyperparams = zoo_hyperparams(args.env_id)
    kwargs = {**constructor_kwargs(hyperparams), **ast.literal_eval(args.kwargs)}
    algo = ComplementaryDQN if args.algo == "complementary" else PrioritizedDQN
    print(f"{algo.__name__} on {args.env_id}, seed {args.seed}, extra kwargs {args.kwargs}", flush=True)
    model = algo(hyperparams.policy, gym.make(args.env_id), seed=args.seed, **kwargs)
    model.learn(args.steps, callback=Report(args.steps // 5))


if __name__ == "__main__":
    main()
