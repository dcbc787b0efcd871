"""The study's goals (docs/benchmarks/protocol.md, "Goals"), per suite, from its run files.

For the target against DQN, PER and the control, on each suite's entries where every contender has
every seed asked for:

- the IQM of the normalised AUC over the other contender's, with a stratified-bootstrap 95% CI;
- P(target > other) with its 95% CI.

The goals read: against DQN, an IQM ratio of at least 1.10 (classic) or 1.20 (non-stationary) and a
lower P bound above 0.5; against PER, "not worse" is an IQM ratio of at least 1.00; against the
control, a lower P bound above 0.5 on at least one suite. A held-out replication is the same table
on seeds the screen did not see (``--seeds 5-9``). Usage::

    python docs/benchmarks/diagnostics/study_goals.py docs/benchmarks/study/runs \\
        --target density-fresh-td --control density-control --seeds 0-9 --out docs/benchmarks/study/goals.md
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

from screen_gates import emit, parse_suites, probability, restrict

from sb3_complementary.benchmark.matrix import parse_seeds
from sb3_complementary.benchmark.metrics import auc
from sb3_complementary.benchmark.report import Interval, collect, iqm_ratios

#: The protocol's two suites, with the classic suite's sparse-reward entry.
SUITES = (
    "classic=CartPole-v1,MountainCar-v0,LunarLander-v3,BitFlipping-10;"
    "non-stationary=CartPole-drift,CartPole-family-uniform,CartPole-family-sequential"
)
#: Minimum IQM AUC ratio to DQN per suite.
DQN_RATIO_GOAL = {"classic": 1.10, "non-stationary": 1.20}


def goal(other: str, suite: str, ratio: Interval, p: Interval, baselines: dict[str, str]) -> str:
    """The protocol's goal against ``other`` on ``suite`` and whether these figures meet it."""
    if other == baselines["dqn"]:
        need = DQN_RATIO_GOAL.get(suite, float("nan"))
        met = ratio.point >= need and p.low > 0.5
        return f"≥ {need:.2f}×, P low > 0.5: {'met' if met else 'missed'}"
    if other == baselines["per"]:
        return f"not worse (ratio ≥ 1.00): {'met' if ratio.point >= 1.0 else 'missed'}"
    return f"P low > 0.5 on one suite: {'met' if p.low > 0.5 else 'missed'}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", type=Path)
    parser.add_argument("--target", required=True)
    parser.add_argument("--control", required=True)
    parser.add_argument("--dqn", default="dqn")
    parser.add_argument("--per", default="per", help="PER's contender name; '' leaves PER out")
    parser.add_argument("--seeds", default="0-9")
    parser.add_argument("--reps", type=int, default=2000)
    parser.add_argument("--suites", default=SUITES, help="'name=entry,entry;name=entry'")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    seeds = parse_seeds(args.seeds)
    others = [c for c in (args.dqn, args.per, args.control) if c]  # an empty name leaves a contender out
    data = restrict(collect(args.runs), [args.target, *others], seeds)
    lines = [
        f"Study goals for {args.target}, seeds {args.seeds}, from `{args.runs}`: IQM of the normalised AUC "
        f"over the other contender's and P({args.target} > other), stratified-bootstrap 95% CIs "
        f"({args.reps} replications).",
    ]
    for suite, members in parse_suites(args.suites).items():
        envs = [e for e in members if e in data.envs]
        missing = sorted(set(members) - set(envs))
        lines += [
            "",
            f"**{suite} suite** ({', '.join(envs) or 'no entry complete'}"
            f"{'; not complete yet: ' + ', '.join(missing) if missing else ''})",
            "",
        ]
        if not envs:
            continue
        subset = dataclasses.replace(data, envs=envs)
        scores = {c: subset.score_matrix(c, auc) for c in [args.target, *others]}
        lines += ["| against | IQM AUC ratio [95% CI] | P(target > it) [95% CI] | goal |", "|---|---|---|---|"]
        for other in others:
            ratio = iqm_ratios(scores, [args.target], other, args.reps, 0)[args.target]
            p = probability(scores, args.target, other, args.reps)
            lines.append(
                f"| {other} | {ratio.fmt()} | {p.fmt()} | "
                f"{goal(other, suite, ratio, p, {'dqn': args.dqn, 'per': args.per})} |"
            )
    emit(lines, args.out)


if __name__ == "__main__":
    main()
