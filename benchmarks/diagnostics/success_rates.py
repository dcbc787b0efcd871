"""The success rate of goal-conditioned runs (the HER benchmark, docs/her.md), from their run files.

Each run file of a goal env records, at every eval point, the share of the evaluation episodes that
reached the goal (``curve.success_rate``). Per entry and contender this prints, over the seeds every
contender has finished:

- the AUC of the success rate (its mean over the eval points: sample efficiency) and the final
  success (the mean of the last 3 eval points), mean ± sample std;
- the IQM of the AUC against the baseline's (``--baseline``, plain HER), with a stratified-bootstrap
  95% CI, and P(contender > baseline);
- the training CPU time against the baseline on the same seed (median [min, max]).

Usage::

    python -m benchmarks.diagnostics.success_rates docs/benchmarks/her/runs --baseline her \\
        --out docs/benchmarks/her/README.md
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path

import numpy as np
from rliable import metrics as rly_metrics

from benchmarks.harness.metrics import mean_pm_std
from benchmarks.harness.report import interval_estimates, iqm_ratios, summarize_ratios, to_interval


def load(runs: Path) -> dict[str, dict[str, dict[int, dict]]]:
    """Entry -> contender -> seed -> the finished run file that records a success rate."""
    table: dict[str, dict[str, dict[int, dict]]] = defaultdict(lambda: defaultdict(dict))
    for path in sorted(runs.glob("*.json")):
        record = json.loads(path.read_text())
        if record.get("status") == "done" and "success_rate" in record.get("curve", {}):
            table[record["env"]["name"]][record["contender"]["name"]][record["seed"]] = record
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", type=Path)
    parser.add_argument("--baseline", default="her")
    parser.add_argument("--reps", type=int, default=2000)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    lines = []
    for entry, contenders in sorted(load(args.runs).items()):
        seeds = sorted(set.intersection(*(set(by_seed) for by_seed in contenders.values())))
        if not seeds or args.baseline not in contenders:
            continue
        names = [args.baseline, *sorted(c for c in contenders if c != args.baseline)]
        rates = {c: np.array([contenders[c][s]["curve"]["success_rate"] for s in seeds]) for c in names}
        aucs = {c: rates[c].mean(axis=1, keepdims=True) for c in names}  # (seeds, 1 task)
        ratios = iqm_ratios(aucs, names[1:], args.baseline, args.reps, 0)
        lines += [
            f"### {entry} (seeds {', '.join(map(str, seeds))})",
            "",
            f"| contender | success-rate AUC | final success | IQM AUC / {args.baseline} [95% CI] "
            f"| P(contender > {args.baseline}) [95% CI] | CPU time / {args.baseline} |",
            "|---|---|---|---|---|---|",
        ]
        for c in names:
            final = rates[c][:, -3:].mean(axis=1)
            if c == args.baseline:
                lines.append(f"| {c} | {mean_pm_std(aucs[c][:, 0], 3)} | {mean_pm_std(final, 3)} | – | – | – |")
                continue
            points, cis = interval_estimates(
                {"p": (aucs[c], aucs[args.baseline])}, rly_metrics.probability_of_improvement, reps=args.reps, seed=0
            )
            cpu = summarize_ratios(
                [
                    contenders[c][s]["timing"]["train_cpu_seconds"]
                    / contenders[args.baseline][s]["timing"]["train_cpu_seconds"]
                    for s in seeds
                ]
            )
            lines.append(
                f"| {c} | {mean_pm_std(aucs[c][:, 0], 3)} | {mean_pm_std(final, 3)} | {ratios[c].fmt()} "
                f"| {to_interval(points['p'], cis['p']).fmt()} | {cpu.fmt()} |"
            )
        lines.append("")
    text = "\n".join(lines)
    print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
