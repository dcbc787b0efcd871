"""
Do the learning tests' twins separate a correct replay from a broken one, at their own budgets?

- ``cartpole``: ``tests/test_learning.py::test_complementary_dqn_solves_cartpole`` trains
  ComplementaryDQN at its defaults with rl-zoo3's CartPole-v1 settings for 50,000 steps and passes a
  seed when an evaluation in the second half reaches 400. Its twin trains the same run's first 5,000
  steps (the 50,000-step schedule, stopped early) and requires every evaluation (at 2,500 and 5,000
  steps) below 50. A run records the evaluations, through the test's own ``evaluation_returns``.
- ``her``: ``tests/test_her.py::test_complementary_dqn_with_her_solves_bit_flipping`` passes a seed
  when the success rate of the last 100 training episodes of ComplementaryDQN + HER on 15 bits, after
  6,000 steps, is above 0.8; its twin must show that this criterion fails for a broken replay. A run
  records the success rate, through the test's own ``bit_flipping_success``.

Each run trains with the correct replay or with the broken one of
``tests.replay_breakage.replay_one_transition`` (every batch is one transition, repeated), one torch
thread as the suite, and records its CPU time.

    python benchmarks/learning_twins.py cartpole --seeds 0-4 --out docs/benchmarks/cartpole-twin
    python benchmarks/learning_twins.py her --seeds 0-4 --steps 2000 6000 --out docs/benchmarks/her-twin

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
from collections.abc import Callable
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


def cartpole_result(steps: int, seed: int) -> dict[str, Any]:
    """The CartPole twin's evaluations at its budget, and whether they stay under its bound."""
    from tests.test_learning import BROKEN_BELOW, EVAL_EVERY, evaluation_returns

    returns = evaluation_returns(seed, start=EVAL_EVERY, stop_at=steps)
    return {
        "evaluation_steps": list(range(EVAL_EVERY, steps + 1, EVAL_EVERY)),
        "returns": returns,
        "max_return": max(returns),
        "below_twin_bound": max(returns) < BROKEN_BELOW,
        "twin_bound": f"max return < {BROKEN_BELOW}",
    }


def her_result(steps: int, seed: int) -> dict[str, Any]:
    """The HER test's success rate at ``steps``, and the criterion's verdict."""
    from tests.test_her import HER_SOLVED, bit_flipping_success

    success = bit_flipping_success(seed, steps=steps)
    return {"success": success, "passes_criterion": success > HER_SOLVED, "criterion": f"success > {HER_SOLVED}"}


#: test -> (one run's result, its default budgets, the fields ``summary.json`` gathers per replay and budget)
TWINS: dict[str, tuple[Callable[[int, int], dict[str, Any]], list[int], tuple[str, ...]]] = {
    "cartpole": (cartpole_result, [5000], ("max_return",)),
    "her": (her_result, [2000, 6000], ("success", "passes_criterion")),
}


def one_run(test: str, replay: str, steps: int, seed: int) -> dict[str, Any]:
    """The test's configuration trained once with the given replay: its result and its CPU time."""
    import pytest
    import torch as th

    from tests.replay_breakage import replay_one_transition

    th.set_num_threads(1)
    with pytest.MonkeyPatch.context() as monkeypatch:
        calls = replay_one_transition(monkeypatch) if replay == "broken" else None
        cpu, wall = time.process_time(), time.perf_counter()
        result = TWINS[test][0](steps, seed)
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    return {
        "replay": replay,
        "steps": steps,
        "seed": seed,
        **result,
        "patched_selections": None if calls is None else calls[0],
        "cpu_seconds": round(cpu, 2),
        "wall_seconds": round(wall, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("test", choices=sorted(TWINS))
    parser.add_argument("--seeds", default="0-4")
    parser.add_argument("--steps", type=int, nargs="+", default=None, help="budgets (default: the twin's)")
    parser.add_argument("--replays", nargs="+", default=list(REPLAYS), choices=REPLAYS)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    _, default_steps, fields = TWINS[args.test]
    sys.path.insert(0, str(ROOT))  # the tests' own functions: the runs are exactly what the tests run
    import stable_baselines3
    import torch

    import sb3_complementary

    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    args.out.mkdir(parents=True, exist_ok=True)
    for steps in args.steps or default_steps:
        for replay in args.replays:
            for seed in seeds(args.seeds):
                path = args.out / f"{replay}__{steps}__s{seed}.json"
                if path.exists():
                    continue
                run = one_run(args.test, replay, steps, seed)
                run["versions"] = {
                    "python": platform.python_version(),
                    "sb3-complementary": sb3_complementary.__version__,
                    "stable_baselines3": stable_baselines3.__version__,
                    "torch": torch.__version__,
                }
                run["git_commit"] = commit
                path.write_text(json.dumps(run, indent=1) + "\n")
                print(f"{path.name}: {[run[field] for field in fields]}, {run['cpu_seconds']:.1f} s CPU", flush=True)
    summary: dict[str, Any] = {}
    for path in sorted(args.out.glob("*__s*.json")):
        run = json.loads(path.read_text())
        entry = summary.setdefault(f"{run['replay']}@{run['steps']}", {"seeds": [], "cpu_seconds": []})
        for field in ("seed", *fields, "cpu_seconds"):
            entry.setdefault(f"{field}s" if field == "seed" else field, []).append(run[field])
    (args.out / "summary.json").write_text(json.dumps(summary, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
