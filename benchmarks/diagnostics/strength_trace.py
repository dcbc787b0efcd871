"""What a learned selection strength (``alpha="auto"``) learned over training, from its run files.

Per entry, one panel: the bandit's probability of each strength (``p_strength_<s>`` in the run
files' ``curve``, recorded at every eval point), averaged over the seeds that recorded it, above the
contender's mean normalised return on the same grid. It shows whether the choice moves as the agent
improves or as the task changes (the drift entries change task at half the budget), and prints the
same numbers as a table::

    python -m benchmarks.diagnostics.strength_trace docs/benchmarks/screen-progress/runs \\
        --contender density-fresh-td-auto --out docs/benchmarks/screen-progress/strength_trace.png
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from benchmarks.harness.report import collect

PREFIX = "p_strength_"


def traces(runs: Path, contender: str) -> dict[str, tuple[np.ndarray, dict[str, np.ndarray], np.ndarray, int]]:
    """
    :return: Entry -> (eval steps ``(T,)``, strength -> mean probability ``(T,)``, mean normalised
        return ``(T,)``, number of seeds), for the entries where some run recorded the probabilities.
    """
    data = collect(runs)
    found: dict[str, tuple[np.ndarray, dict[str, np.ndarray], np.ndarray, int]] = {}
    for env in data.envs:
        records = [r for r in data.records if r.contender == contender and r.env == env and r.status == "done"]
        records = [r for r in records if any(k.startswith(PREFIX) for k in r.data["curve"])]
        if not records:
            continue
        keys = sorted({k for r in records for k in r.data["curve"] if k.startswith(PREFIX)})
        probabilities = {k.removeprefix(PREFIX): np.mean([r.data["curve"][k] for r in records], axis=0) for k in keys}
        returns = np.mean([data.normalized(contender, env, r.seed) for r in records], axis=0)
        found[env] = (data.timesteps[env], probabilities, returns, len(records))
    return found


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", type=Path)
    parser.add_argument("--contender", default="density-fresh-td-auto")
    parser.add_argument("--out", type=Path, default=None, help="PNG of the panels")
    args = parser.parse_args(argv)
    found = traces(args.runs, args.contender)
    if not found:
        raise SystemExit(f"no run of {args.contender!r} in {args.runs} records p_strength_<s>")
    for env, (steps, probabilities, returns, n) in found.items():
        header = ", ".join(f"P(alpha={s})" for s in probabilities)
        print(f"\n{env} ({n} seeds): eval step, normalised return, {header}")
        for t in range(len(steps)):
            row = " ".join(f"{p[t]:.2f}" for p in probabilities.values())
            print(f"  {int(steps[t]):>7d}  {returns[t]:+.2f}  {row}")
    if args.out is None:
        return
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, len(found), figsize=(3.2 * len(found), 4.6), sharex="col", squeeze=False)
    for col, (env, (steps, probabilities, returns, n)) in enumerate(found.items()):
        top, bottom = axes[0, col], axes[1, col]
        for strength, p in probabilities.items():
            top.plot(steps, p, label=f"alpha={strength}")
        top.set_ylim(0, 1)
        top.set_title(f"{env} ({n} seeds)", fontsize=9)
        bottom.plot(steps, returns, color="black")
        bottom.set_xlabel("env steps", fontsize=8)
        if col == 0:
            top.set_ylabel("P(strength)")
            bottom.set_ylabel("normalised return")
            top.legend(fontsize=7)
    fig.suptitle(f"{args.contender}: what the bandit learned over training", fontsize=10)
    fig.tight_layout()
    fig.savefig(args.out, dpi=110)
    print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
