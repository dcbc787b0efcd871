"""The no-harm gate with a noise-aware floor, as issue 31's fallback study states it before it runs.

The gate as written (``docs/benchmarks/protocol.md``) asks, per entry, for a mean normalised AUC of
at least 0.95x DQN's. Two uniform replays fail it against each other most of the time
(``harm_noise.py``), because one bad DQN seed moves DQN's mean by more than 5%. This script reads
the gate against what uniform replay itself gives: per entry, the ``alpha=0`` control (uniform
draws through the package's buffer) and DQN are pooled, split at random into two groups of the
study's sizes 10,000 times, and the 5th percentile of the ratio of their means is the floor. A
contender passes on an entry when its ratio to DQN is at least 0.95 *or* at least that floor: a
replay no different from uniform fails an entry at most 5% of the time. The floor is never above
0.95, so it only relaxes the gate where the entry's noise says 0.95 cannot be resolved.

Beside the gate it prints P(contender > DQN) per entry (the share of seed pairs it wins), a
reading that one outlying seed cannot move much. Usage::

    python -m benchmarks.diagnostics.harm_floor docs/benchmarks/study-laber/runs laber \\
        --out docs/benchmarks/study-laber/gates.md
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from benchmarks.diagnostics.harm_noise import HARM_GATE  # the gate as the protocol writes it
from benchmarks.harness.metrics import auc
from benchmarks.harness.report import ReportData, collect
from benchmarks.harness.seeds import parse_seeds

FLOOR_PERCENTILE = 5.0
PERMUTATIONS = 10_000


def permutation_floor(control: np.ndarray, reference: np.ndarray, n_candidate: int, seed: int = 0) -> float:
    """The ``FLOOR_PERCENTILE``-th percentile of mean(group A) / mean(group B) under no difference.

    :param control: per-seed scores of a replay that selects nothing, shape ``(n_control,)``
    :param reference: per-seed scores of the reference (DQN), shape ``(n_reference,)``
    :param n_candidate: the size of group A, the contender's seed count (group B has the reference's)
    :param seed: the permutations' random seed, so the floor is reproducible
    :return: the floor, before it is capped at ``HARM_GATE``
    """
    pool = np.concatenate([control, reference])
    n_reference = len(reference)
    if n_candidate + n_reference > len(pool):
        raise ValueError(
            f"n_candidate={n_candidate} plus {n_reference} reference seeds exceed the {len(pool)} pooled runs"
        )
    rng = np.random.default_rng(seed)
    ratios = np.empty(PERMUTATIONS)
    for i in range(PERMUTATIONS):
        perm = rng.permutation(pool)
        ratios[i] = perm[:n_candidate].mean() / perm[n_candidate : n_candidate + n_reference].mean()
    return float(np.percentile(ratios, FLOOR_PERCENTILE))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", type=Path)
    parser.add_argument("contenders", nargs="+", help="contenders to gate")
    parser.add_argument("--reference", default="dqn")
    parser.add_argument("--control", default="density-control")
    parser.add_argument(
        "--control-runs",
        type=Path,
        nargs="+",
        default=None,
        help="folders to read the control from, the first holding an entry winning (default: RUNS)",
    )
    parser.add_argument("--seeds", default=None, help="read only these seeds, e.g. '5-9' or '0,3,5-7'")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    data = collect(args.runs)
    control_data = [collect(folder) for folder in args.control_runs] if args.control_runs else [data]
    wanted = set(parse_seeds(args.seeds)) if args.seeds else None

    def scores(name: str, env: str, source: ReportData = data) -> np.ndarray:
        seeds = sorted(s for s in source.curves.get(name, {}).get(env, {}) if wanted is None or s in wanted)
        return np.array([auc(source.normalized(name, env, s)) for s in seeds])

    def control_scores(env: str) -> np.ndarray:
        for source in control_data:
            found = scores(args.control, env, source)
            if len(found):
                return found
        return np.array([])

    lines = [
        f"No harm against `{args.reference}`: the mean normalised AUC ratio per entry, passing at "
        f"{HARM_GATE} or at the floor (the {FLOOR_PERCENTILE:g}th percentile of the ratio between "
        f"`{args.control}` and `{args.reference}` under {PERMUTATIONS:,} random splits of their pooled seeds)."
        + (f" Seeds {args.seeds} only." if args.seeds else ""),
        "",
        "| contender | entry | seeds | ratio | floor | passes | P(contender > reference) |",
        "|---|---|---|---|---|---|---|",
    ]
    for name in args.contenders:
        for env in data.envs:
            mine, ref = scores(name, env), scores(args.reference, env)
            if len(mine) == 0 or len(ref) == 0:
                lines.append(f"| {name} | {env} | {len(mine)} | – | – | not run | – |")
                continue
            ratio = mine.mean() / ref.mean()
            control = control_scores(env)
            if len(control) >= len(mine):
                floor = min(HARM_GATE, permutation_floor(control, ref, len(mine)))
                floor_text = f"{floor:.3f}"
            else:  # without enough control runs only the gate as written applies
                floor, floor_text = HARM_GATE, "– (no control)"
            verdict = "yes" if ratio >= floor else "**no**"
            wins = float(np.mean(np.sign(mine[:, None] - ref[None, :]) + 1) / 2)
            lines.append(f"| {name} | {env} | {len(mine)} | {ratio:.3f} | {floor_text} | {verdict} | {wins:.2f} |")
    text = "\n".join(lines) + "\n"
    if args.out:
        args.out.write_text(text)
    print(text, end="")


if __name__ == "__main__":
    main()
