"""
Does the cheap twin of the CartPole learning test separate a correct replay from a broken one?

``tests/test_learning.py::test_complementary_dqn_solves_cartpole`` trains ComplementaryDQN at its
defaults with rl-zoo3's CartPole-v1 settings for 50,000 steps and passes a seed when an evaluation in
the second half reaches 400. Its twin trains the same run's first 5,000 steps (the 50,000-step
schedule, stopped early) with the broken replay of ``tests.replay_breakage.replay_one_transition`` and
requires every evaluation (at 2,500 and 5,000 steps) below 50. This script runs the twin's budget
with the correct replay and with the broken one, through the test's own ``evaluation_returns`` (one
torch thread, as the suite), and records the evaluations and the CPU time.

    python benchmarks/cartpole_twin.py --seeds 0-4 --out docs/benchmarks/cartpole-twin

Each run writes ``<replay>__<steps>__s<seed>.json``; runs already written are skipped. ``summary.json``
gathers them.
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
REPLAYS = ("correct", "broken")


def seeds(text: str) -> list[int]:
    """``"0-4"`` or ``"0,2,5"`` as a list of seeds."""
    if "-" in text:
        first, last = (int(part) for part in text.split("-"))
        return list(range(first, last + 1))
    return [int(part) for part in text.split(",")]


def one_run(replay: str, steps: int, seed: int) -> dict[str, Any]:
    """The twin's run once: its evaluations, whether they pass the twin's bound, the CPU time."""
    import pytest
    import torch as th

    from tests.replay_breakage import replay_one_transition
    from tests.test_learning import BROKEN_BELOW, EVAL_EVERY, evaluation_returns

    th.set_num_threads(1)
    with pytest.MonkeyPatch.context() as monkeypatch:
        calls = replay_one_transition(monkeypatch) if replay == "broken" else None
        cpu, wall = time.process_time(), time.perf_counter()
        returns = evaluation_returns(seed, start=EVAL_EVERY, stop_at=steps)
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    return {
        "replay": replay,
        "steps": steps,
        "seed": seed,
        "evaluation_steps": list(range(EVAL_EVERY, steps + 1, EVAL_EVERY)),
        "returns": returns,
        "max_return": max(returns),
        "below_twin_bound": max(returns) < BROKEN_BELOW,
        "twin_bound": f"max return < {BROKEN_BELOW}",
        "patched_selections": None if calls is None else calls[0],
        "cpu_seconds": round(cpu, 2),
        "wall_seconds": round(wall, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", default="0-4")
    parser.add_argument("--steps", type=int, nargs="+", default=[5000])
    parser.add_argument("--replays", nargs="+", default=list(REPLAYS), choices=REPLAYS)
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "benchmarks" / "cartpole-twin")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))  # the tests' own functions: the runs are exactly what the tests run
    import stable_baselines3
    import torch

    import sb3_complementary

    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    args.out.mkdir(parents=True, exist_ok=True)
    for steps in args.steps:
        for replay in args.replays:
            for seed in seeds(args.seeds):
                path = args.out / f"{replay}__{steps}__s{seed}.json"
                if path.exists():
                    continue
                run = one_run(replay, steps, seed)
                run["versions"] = {
                    "python": platform.python_version(),
                    "sb3-complementary": sb3_complementary.__version__,
                    "stable_baselines3": stable_baselines3.__version__,
                    "torch": torch.__version__,
                }
                run["git_commit"] = commit
                path.write_text(json.dumps(run, indent=1) + "\n")
                print(f"{path.name}: returns {[round(r, 1) for r in run['returns']]}, {run['cpu_seconds']:.1f} s CPU")
    runs = [json.loads(path.read_text()) for path in sorted(args.out.glob("*__s*.json"))]
    summary: dict[str, Any] = {}
    for run in runs:
        key = f"{run['replay']}@{run['steps']}"
        entry = summary.setdefault(key, {"seeds": [], "max_return": [], "cpu_seconds": []})
        entry["seeds"].append(run["seed"])
        entry["max_return"].append(run["max_return"])
        entry["cpu_seconds"].append(run["cpu_seconds"])
    (args.out / "summary.json").write_text(json.dumps(summary, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
