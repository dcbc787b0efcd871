"""
Does the HER learning test's criterion reject a broken replay, and at which budget?

``tests/test_her.py::test_complementary_dqn_with_her_solves_bit_flipping`` passes a seed when the
success rate of the last 100 training episodes of ComplementaryDQN + HER on 15 bits, after 6,000
steps, is above 0.8. Its twin must show that this criterion fails for a replay that is broken. This
script trains the test's own configuration (``tests.test_her.bit_flipping_success``, one torch
thread, as the suite) with the correct replay and with the broken one of
``tests.replay_breakage.replay_one_transition`` (every batch is one transition, repeated), for the
given seeds and budgets, and records the success rate and the CPU time of each run.

    python benchmarks/her_twin.py --seeds 0-4 --steps 2000 6000 --out docs/benchmarks/her-twin

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
    """Train the test's configuration once; the success rate it reaches, the criterion's verdict, the CPU time."""
    import pytest
    import torch as th

    from tests.replay_breakage import replay_one_transition
    from tests.test_her import HER_SOLVED, bit_flipping_success

    th.set_num_threads(1)
    with pytest.MonkeyPatch.context() as monkeypatch:
        calls = replay_one_transition(monkeypatch) if replay == "broken" else None
        cpu, wall = time.process_time(), time.perf_counter()
        success = bit_flipping_success(seed, steps=steps)
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    return {
        "replay": replay,
        "steps": steps,
        "seed": seed,
        "success": success,
        "passes_criterion": success > HER_SOLVED,
        "criterion": f"success > {HER_SOLVED}",
        "patched_selections": None if calls is None else calls[0],
        "cpu_seconds": round(cpu, 2),
        "wall_seconds": round(wall, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", default="0-4")
    parser.add_argument("--steps", type=int, nargs="+", default=[2000, 6000])
    parser.add_argument("--replays", nargs="+", default=list(REPLAYS), choices=REPLAYS)
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "benchmarks" / "her-twin")
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
                print(f"{path.name}: success {run['success']:.2f}, {run['cpu_seconds']:.1f} s CPU", flush=True)
    runs = [json.loads(path.read_text()) for path in sorted(args.out.glob("*__s*.json"))]
    summary: dict[str, Any] = {}
    for run in runs:
        key = f"{run['replay']}@{run['steps']}"
        entry = summary.setdefault(key, {"seeds": [], "success": [], "passes_criterion": [], "cpu_seconds": []})
        for field, value in (("seeds", run["seed"]), ("success", run["success"])):
            entry[field].append(value)
        entry["passes_criterion"].append(run["passes_criterion"])
        entry["cpu_seconds"].append(run["cpu_seconds"])
    (args.out / "summary.json").write_text(json.dumps(summary, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
