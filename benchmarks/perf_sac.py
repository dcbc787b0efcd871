"""
Overhead of ComplementarySAC over SB3's SAC (issue #4), measured side by side in one process.

    python -m benchmarks.perf_sac --out docs/performance-logs/performance_sac.json  # 20k steps, 3 interleaved repeats
    python -m benchmarks.perf_sac --steps 2000 --repeats 1                # a quick look
    python -m benchmarks.perf_sac --with-per                              # PrioritizedSAC as well

Each repeat runs SAC, then ComplementarySAC (then PrioritizedSAC with ``--with-per``) on Pendulum-v1
with rl-zoo3's tuned SAC hyperparameters (read from the installed ``rl_zoo3``'s ``hyperparams/sac.yml``),
the same seed and the same number of steps. Ratios are taken per repeat and the median is what we quote:
these machines are shared and noisy, absolute times are not. Wall-clock and process CPU time are both
recorded; with one torch thread the CPU time is the work done, and it moves less when others share the
machine. Target (issue #4): median wall-clock ratio <= 1.15.
"""

import argparse
import json
import platform
import statistics
import time
from pathlib import Path
from typing import Any

import torch as th
from stable_baselines3 import SAC

import sb3_complementary
from benchmarks.harness.hyperparams import constructor_kwargs, zoo_hyperparams
from sb3_complementary import ComplementarySAC, PrioritizedSAC

ENV_ID = "Pendulum-v1"


def bench(steps: int, repeats: int, seed: int, with_per: bool) -> dict[str, Any]:
    hyperparams = zoo_hyperparams(ENV_ID, "sac")
    kwargs = constructor_kwargs(hyperparams)
    algos: dict[str, Any] = {"SAC": SAC, "ComplementarySAC": ComplementarySAC}
    if with_per:
        algos["PrioritizedSAC"] = PrioritizedSAC
    wall: dict[str, list[float]] = {name: [] for name in algos}
    cpu: dict[str, list[float]] = {name: [] for name in algos}
    for repeat in range(repeats):
        for name, cls in algos.items():
            model = cls(hyperparams.policy, ENV_ID, seed=seed, device="cpu", **constructor_kwargs(hyperparams))
            cpu_start, wall_start = time.process_time(), time.perf_counter()
            model.learn(steps)
            wall[name].append(time.perf_counter() - wall_start)
            cpu[name].append(time.process_time() - cpu_start)
            print(f"  repeat {repeat} {name}: {wall[name][-1]:.1f}s wall, {cpu[name][-1]:.1f}s cpu", flush=True)
    out: dict[str, Any] = {
        "env_id": ENV_ID,
        "steps": steps,
        "repeats": repeats,
        "hyperparams": {**hyperparams.to_dict(), "model_kwargs": {k: repr(v) for k, v in kwargs.items()}},
        "wall_seconds": wall,
        "cpu_seconds": cpu,
    }
    for clock, seconds in (("wall", wall), ("cpu", cpu)):
        for name in algos:
            if name == "SAC":
                continue
            ratios = [a / b for a, b in zip(seconds[name], seconds["SAC"], strict=True)]
            out[f"{clock}_ratio_{name}_to_SAC"] = {
                "median": statistics.median(ratios),
                "min": min(ratios),
                "max": max(ratios),
            }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--with-per", action="store_true", help="also time PrioritizedSAC")
    parser.add_argument("--out", type=Path, default=None, help="JSON file to merge the results into (key train_sac)")
    args = parser.parse_args()
    th.set_num_threads(1)
    results: dict[str, Any] = json.loads(args.out.read_text()) if args.out and args.out.exists() else {}
    results["machine"] = {"platform": platform.platform(), "python": platform.python_version(), "torch": th.__version__}
    results["version"] = sb3_complementary.__version__
    results["train_sac"] = bench(args.steps, args.repeats, args.seed, args.with_per)
    print(json.dumps({k: v for k, v in results["train_sac"].items() if "ratio" in k}, indent=1), flush=True)
    if args.out:
        args.out.write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
