"""
Needs commit 8cac570 (``git checkout 8cac570``): it reads the label store and the label signals
(``contribution="td" | "influence" | "outcome"``), removed after that commit (docs/changelog.md).

Is the learned replay distribution informative? Train one seed with the study's zoo hyperparameters
and print, at five points, how far the sampling distribution is from uniform and how well the
experience extractor predicts the labels it is fitted on.

    python -m benchmarks.diagnostics.score_spread CartPole-v1 25000
    python -m benchmarks.diagnostics.score_spread CartPole-v1 25000 --kwargs "{'contribution': 'td'}"
    python -m benchmarks.diagnostics.score_spread CartPole-v1 25000 --algo per

Columns: ``ess`` is the ESS fraction of the sampling distribution (1 = uniform replay); the score
percentiles are over the stored transitions; ``label_auc`` is the extractor's ROC AUC on its own
label store (in-sample: an upper bound on how well it separates helpful from unhelpful labels,
0.5 = no better than chance; labels in [0, 1] are split at 0.5). Over the labels made since the
previous line: ``auc(|TD| now)`` is how well the batch's |TD| at the step that labels it separates
the labels, ``auc(|TD| stored)`` how well the extractor's ``td_abs`` feature (the |TD| of the
transition's previous replay) does, and ``rho`` their Spearman correlation.
"""

import argparse
import ast

import gymnasium as gym
import numpy as np
import torch as th
from sb3_complementary.common.features import SCALAR_FEATURES
from scipy.stats import mannwhitneyu, spearmanr
from stable_baselines3.common.callbacks import BaseCallback

from benchmarks.harness.hyperparams import constructor_kwargs, zoo_hyperparams
from sb3_complementary import ComplementaryDQN, PrioritizedDQN

TD_FEATURE = SCALAR_FEATURES.index("td_abs")  # column of the stored |TD| in the feature matrix


def auc(predicted: np.ndarray, positive: np.ndarray) -> float:
    """ROC AUC of ``predicted`` for the boolean labels ``positive`` (Mann-Whitney U / (n+ n-))."""
    if len(positive) < 500 or positive.all() or not positive.any():
        return float("nan")
    u = mannwhitneyu(predicted[positive], predicted[~positive]).statistic
    return float(u / (positive.sum() * (~positive).sum()))


def label_auc(model: ComplementaryDQN) -> float:
    """In-sample ROC AUC of the extractor on its label store."""
    n = len(model.label_store)
    with th.no_grad():
        predicted = model.extractor(th.as_tensor(model.label_store.features[:n])).numpy()
    return auc(predicted, model.label_store.labels[:n] > 0.5)


def record_labels(model: ComplementaryDQN) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Wrap the signal's ``observe`` to keep (|TD| now, stored |TD| feature, label) of every labelled batch."""
    log: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    signal, store = model.contribution_signal, model.label_store
    observe = signal.observe

    def observe_and_record(features: np.ndarray, td_abs: np.ndarray, *args: object, **kwargs: object) -> None:
        observe(features, td_abs, *args, **kwargs)  # type: ignore[arg-type]
        labels = store.labels[(store.pos - len(td_abs) + np.arange(len(td_abs))) % store.capacity]
        log.append((td_abs.copy(), features[:, TD_FEATURE].copy(), labels > 0.5))

    signal.observe = observe_and_record  # type: ignore[method-assign]
    return log


class Report(BaseCallback):
    def __init__(self, every: int, log: list[tuple[np.ndarray, np.ndarray, np.ndarray]] | None) -> None:
        super().__init__()
        self.every = every
        self.log = log

    def _on_step(self) -> bool:
        if self.num_timesteps % self.every:
            return True
        buffer = self.model.replay_buffer
        indices = buffer.valid_indices()
        scores = buffer.scores[indices]
        line = f"{self.num_timesteps:>7}  ess {self.model.sampling_ess_fraction():.3f}"
        line += f"  score p5/p50/p95 {np.percentile(scores, [5, 50, 95]).round(3).tolist()}"
        if isinstance(self.model, ComplementaryDQN):
            positive = self.model.label_store.positive_share()
            line += f"  positive labels {positive:.3f}  label_auc {label_auc(self.model):.3f}"
        if self.log:
            td_now, td_stored, labels = (np.concatenate(column) for column in zip(*self.log, strict=True))
            line += f"  auc(|TD| now) {auc(td_now, labels):.3f}  auc(|TD| stored) {auc(td_stored, labels):.3f}"
            line += f"  rho {spearmanr(td_now, td_stored)[0]:.3f}"
            self.log.clear()
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
    log = record_labels(model) if isinstance(model, ComplementaryDQN) else None
    model.learn(args.steps, callback=Report(args.steps // 5, log))


if __name__ == "__main__":
    main()
