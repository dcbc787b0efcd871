"""How often two uniform replays fail the no-harm gate against each other, from a study's run files.

The no-harm gate (docs/benchmarks/protocol.md) asks, per entry, for a mean normalised AUC of at
least 0.95x DQN's over the screen's 5 seeds. Its noise floor is what the same gate says of a
contender that selects nothing: the ``alpha=0`` control draws uniformly through the package's
buffer, so it differs from DQN by its random stream only. From the study's 10 seeds this script
prints, per entry, the control's ratio to DQN over all common seeds, and over every 5-seed subset
(the same seeds for both, as a screen pairs them) the share of subsets below the gate and the 5th
percentile of the ratio; then the share of subsets in which the control fails the gate on at
least one entry. Usage::

    python -m benchmarks.diagnostics.harm_noise docs/benchmarks/study/runs \\
        --contender density-control --reference dqn --out docs/benchmarks/study/harm-noise.md
"""

from __future__ import annotations

import argparse
import itertools
from pathlib import Path

import numpy as np

from benchmarks.harness.metrics import auc
from benchmarks.harness.report import collect

HARM_GATE = 0.95


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", type=Path)
    parser.add_argument("--contender", default="density-control")
    parser.add_argument("--reference", default="dqn")
    parser.add_argument("--subset", type=int, default=5, help="seeds per subset (a screen's count)")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    data = collect(args.runs)
    seeds = sorted(set(data.complete_seeds[args.contender]) & set(data.complete_seeds[args.reference]))
    if len(seeds) <= args.subset:
        raise SystemExit(f"need more than {args.subset} common seeds, have {seeds}")
    subsets = [list(s) for s in itertools.combinations(range(len(seeds)), args.subset)]
    lines = [
        f"`{args.contender}` against `{args.reference}`: mean normalised AUC ratio per entry, over the "
        f"{len(seeds)} common seeds and over each of the {len(subsets)} subsets of {args.subset} of them.",
        "",
        f"| entry | ratio, {len(seeds)} seeds | subsets below {HARM_GATE} | 5th percentile over the subsets |",
        "|---|---|---|---|",
    ]
    failing = np.zeros(len(subsets), dtype=bool)
    for env in data.envs:
        scores = {
            name: np.array([auc(data.normalized(name, env, s)) for s in seeds])
            for name in (args.contender, args.reference)
        }
        ratios = np.array([scores[args.contender][s].mean() / scores[args.reference][s].mean() for s in subsets])
        failing |= ratios < HARM_GATE
        full = scores[args.contender].mean() / scores[args.reference].mean()
        lines.append(f"| {env} | {full:.2f} | {np.mean(ratios < HARM_GATE):.0%} | {np.percentile(ratios, 5):.2f} |")
    lines += [
        "",
        f"Subsets in which `{args.contender}` fails the gate on at least one of the {len(data.envs)} entries: "
        f"{failing.mean():.0%}.",
    ]
    text = "\n".join(lines) + "\n"
    if args.out:
        args.out.write_text(text)
    print(text, end="")


if __name__ == "__main__":
    main()
