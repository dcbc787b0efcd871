"""
Pilot of a return-based credit (issue 31, gate 0, second signal), before anything is built on it.

The held-out TD-loss signal failed gate 0 (``benchmarks/pilot_progress.py``). The issue's fallback
is the credit of ERO (Zha et al., IJCAI 2019) and NERS (Oh et al., ICLR 2021): the change in
episodic return that follows a stretch of training under one replay policy.

Question: does that credit rank a uniform pick against the default's selected pick the way
whole-run returns do? The 10-seed study puts selection ahead on CartPole-drift and MountainCar-v0,
and behind on LunarLander-v3.

Each run is the default ComplementaryDQN of the study's entry. Its budget is cut into 40 windows of
equal length. At the start of each window a fair coin sets the pool's selection strength for the
whole window: the **uniform** arm (``alpha=0``: the batch is a uniform pick from the candidate pool,
the control) or the **selected** arm (``alpha=1``: the default). Everything else (the pool, the
classifier's fit, the re-score) runs the same in both arms. The training episodes' returns are
recorded with the step they end at.

The credit of window ``k`` is ``R(k+1) - R(k)``: the mean return of the episodes that end in the
window after it, minus that of the episodes ending in it (ERO's reward: a replay policy is judged
by the return change of the policy it trained). Windows without a finished episode on either side
get no credit. Gate 0 compares the mean credit of the two arms over the first half of the budget.

    python -m benchmarks.pilot_return run --out docs/benchmarks/pilot-return/runs --seeds 0-2 --workers 2
    python -m benchmarks.pilot_return report --runs docs/benchmarks/pilot-return/runs \
        --out docs/benchmarks/pilot-return

Each run writes ``<entry>__seed<k>.npz`` when it finishes; finished runs are skipped, so the pilot
resumes. ``report`` writes ``summary.json``, ``credit.png`` and the page ``README.md``.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import time
from pathlib import Path
from typing import Any

import numpy as np

#: Entries of the study matrix, and the sign the 10-seed study's returns give
#: (+1: selection ahead of the control; -1: behind).
ENTRIES: dict[str, dict[str, Any]] = {
    "CartPole-drift": {"expected": +1},
    "MountainCar-v0": {"expected": +1},
    "LunarLander-v3": {"expected": -1},
}
STUDY_MATRIX = Path(__file__).resolve().parent / "matrices" / "study.yml"
N_WINDOWS = 40
#: The two arms' selection strengths (the buffer's ``alpha``).
ARMS = {"uniform": 0.0, "selected": 1.0}


def _window_callback(budget: int, seed: int) -> Any:
    from stable_baselines3.common.callbacks import BaseCallback

    class ArmPerWindow(BaseCallback):  # type: ignore[misc]
        """Sets the pool's ``alpha`` by a fair coin at each window start; records the episodes' returns."""

        def __init__(self) -> None:
            super().__init__()
            self.rng = np.random.default_rng(777 + seed)
            self.window = budget // N_WINDOWS
            self.arms: list[float] = []
            self.episodes: list[tuple[int, float]] = []

        def _set_arm(self) -> None:
            alpha = ARMS["selected"] if self.rng.random() < 0.5 else ARMS["uniform"]
            self.arms.append(alpha)
            self.model.replay_buffer.alpha = alpha

        def _on_training_start(self) -> None:
            self._set_arm()

        def _on_step(self) -> bool:
            for info in self.locals.get("infos", []):
                if "episode" in info:
                    self.episodes.append((self.num_timesteps, float(info["episode"]["r"])))
            if self.num_timesteps % self.window == 0 and len(self.arms) < N_WINDOWS:
                self._set_arm()
            return True

    return ArmPerWindow()


def run_one(entry_name: str, seed: int, out: Path) -> str:
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    import torch as th

    th.set_num_threads(1)
    from stable_baselines3.common.monitor import Monitor

    from benchmarks.harness.envs import make_env
    from benchmarks.harness.hyperparams import constructor_kwargs
    from benchmarks.harness.matrix import load_matrix
    from sb3_complementary import ComplementaryDQN

    path = out / f"{entry_name}__seed{seed}.npz"
    if path.exists():
        return f"{path.name}: done before"
    entry = next(e for e in load_matrix(STUDY_MATRIX).suite if e.name == entry_name)
    env = Monitor(make_env(entry.env_id, entry.env_kwargs, entry.wrappers))
    model = ComplementaryDQN(
        entry.hyperparams.policy, env, seed=seed, device="cpu", **constructor_kwargs(entry.hyperparams)
    )
    callback = _window_callback(entry.budget, seed)
    start = time.process_time()
    model.learn(entry.budget, callback=callback)
    tmp = path.with_suffix(".tmp.npz")
    np.savez_compressed(
        tmp,
        arms=np.asarray(callback.arms),
        window=callback.window,
        episodes=np.asarray(callback.episodes, dtype=np.float64).reshape(-1, 2),
        budget=entry.budget,
        seed=seed,
        cpu_seconds=time.process_time() - start,
    )
    tmp.replace(path)
    return f"{path.name}: {len(callback.episodes)} episodes, {time.process_time() - start:.0f} CPU s"


def window_credits(arms: np.ndarray, window: int, episodes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(K,)`` each window's arm (alpha) and credit ``R(k+1) - R(k)`` (NaN where either side has no episode)."""
    k = np.minimum((episodes[:, 0] - 1) // window, len(arms) - 1).astype(int) if len(episodes) else np.array([], int)
    means = np.array([episodes[k == w, 1].mean() if np.any(k == w) else np.nan for w in range(len(arms))])
    credit = np.full(len(arms), np.nan)
    credit[:-1] = means[1:] - means[:-1]
    return arms, credit


def _bootstrap(sel: np.ndarray, uni: np.ndarray, rng: np.random.Generator, n: int = 4000) -> tuple[float, float]:
    a = rng.choice(sel, size=(n, len(sel))).mean(axis=1)
    b = rng.choice(uni, size=(n, len(uni))).mean(axis=1)
    low, high = np.percentile(a - b, [2.5, 97.5])
    return float(low), float(high)


def report(runs: Path, out: Path) -> dict[str, Any]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rng = np.random.default_rng(0)
    summary: dict[str, Any] = {"entries": {}}
    fig, axes = plt.subplots(1, len(ENTRIES), figsize=(4.2 * len(ENTRIES), 3.2), squeeze=False)
    for col, (entry, spec) in enumerate(ENTRIES.items()):
        result: dict[str, Any] = {"expected_sign": spec["expected"], "seeds": [], "early_diff": [], "n_windows": []}
        pooled: dict[str, list[float]] = {"selected": [], "uniform": []}
        ax = axes[0][col]
        for file in sorted(runs.glob(f"{entry}__seed*.npz")):
            data = np.load(file)
            arms, credit = window_credits(data["arms"], int(data["window"]), data["episodes"])
            early = (np.arange(len(arms)) < len(arms) // 2) & np.isfinite(credit)
            sel, uni = credit[early & (arms > 0)], credit[early & (arms == 0)]
            result["seeds"].append(int(data["seed"]))
            result["n_windows"].append([len(sel), len(uni)])
            result["early_diff"].append(float(sel.mean() - uni.mean()) if len(sel) and len(uni) else None)
            pooled["selected"] += sel.tolist()
            pooled["uniform"] += uni.tolist()
            x = (np.arange(len(arms)) + 0.5) / len(arms) * 100
            ax.scatter(x[arms > 0], credit[arms > 0], s=8, color="C0", alpha=0.6)
            ax.scatter(x[arms == 0], credit[arms == 0], s=8, color="C1", alpha=0.6)
        if pooled["selected"] and pooled["uniform"]:
            sel, uni = np.array(pooled["selected"]), np.array(pooled["uniform"])
            result["pooled_early_diff"] = float(sel.mean() - uni.mean())
            result["pooled_early_ci"] = list(_bootstrap(sel, uni, rng))
            result["ranks_as_returns"] = bool(np.sign(result["pooled_early_diff"]) == spec["expected"])
            signs = [np.sign(d) for d in result["early_diff"] if d is not None]
            result["seeds_ranking_as_returns"] = int(sum(s == spec["expected"] for s in signs))
        ax.axhline(0, color="k", lw=0.6)
        ax.axvline(50, color="grey", lw=0.6, ls=":")
        ax.set_title(f"{entry} (expected {'+' if spec['expected'] > 0 else '-'})", fontsize=9)
        ax.set_xlabel("% of the study's budget", fontsize=8)
        if col == 0:
            ax.set_ylabel("window credit R(k+1) - R(k)\n(blue: selected, orange: uniform)", fontsize=8)
        summary["entries"][entry] = result
    ranked = [e for e, r in summary["entries"].items() if r.get("ranks_as_returns")]
    summary["gate0"] = {"entries_ranked_as_returns": ranked, "passes": len(ranked) >= 2}
    fig.tight_layout()
    out.mkdir(parents=True, exist_ok=True)
    fig.savefig(out / "credit.png", dpi=110)
    (out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    (out / "README.md").write_text(render_page(summary))
    return summary


def render_page(summary: dict[str, Any]) -> str:
    """The pilot's page (generated: never edit it by hand)."""
    lines = [
        "# Return-based credit pilot (gate 0, second signal)",
        "",
        "Generated by `python -m benchmarks.pilot_return report --runs docs/benchmarks/pilot-return/runs "
        "--out docs/benchmarks/pilot-return` from the run files in `runs/` (made by "
        "`python -m benchmarks.pilot_return run --out docs/benchmarks/pilot-return/runs --seeds 0-2 --workers 2`). "
        "What it measures, and why: the docstring of `benchmarks/pilot_return.py` and "
        "[the history](../history.md).",
        "",
        f"Each run is cut into {N_WINDOWS} windows; a fair coin gives each window the uniform pick (`alpha=0`) "
        "or the default's selected pick (`alpha=1`) from the same candidate pool. A window's credit is the "
        "change of the mean training-episode return from it to the next window (ERO's reward). Each cell: "
        "mean credit of the selected windows minus that of the uniform windows, over the first half of the "
        "budget. The expected sign is the study's: + where selection led the returns (CartPole-drift, "
        "MountainCar-v0), - where it fell (LunarLander-v3).",
        "",
        "| entry | expected | seeds | per seed (windows selected/uniform) | pooled [95% CI] | ranks as the returns |",
        "|---|---|---|---|---|---|",
    ]
    for entry, r in summary["entries"].items():
        cells = ", ".join(
            ("n/a" if d is None else f"{d:+.2f}") + f" ({n[0]}/{n[1]})"
            for d, n in zip(r["early_diff"], r["n_windows"], strict=True)
        )
        pooled = (
            f"{r['pooled_early_diff']:+.2f} [{r['pooled_early_ci'][0]:+.2f}, {r['pooled_early_ci'][1]:+.2f}]"
            if "pooled_early_diff" in r
            else "n/a"
        )
        verdict = "yes" if r.get("ranks_as_returns") else "**no**"
        sign = "+" if r["expected_sign"] > 0 else "-"
        lines.append(f"| {entry} | {sign} | {', '.join(map(str, r['seeds']))} | {cells} | {pooled} | {verdict} |")
    gate = summary["gate0"]
    lines += [
        "",
        f"**Gate 0** (ranks the arms as the returns do on at least 2 of the 3 entries): "
        f"{'passes' if gate['passes'] else '**fails**'} "
        f"(ranked as the returns: {', '.join(gate['entries_ranked_as_returns']) or 'none'}).",
        "",
        "![window credits per arm](credit.png)",
        "",
    ]
    return "\n".join(lines)


def _run_star(args: tuple[str, int, Path]) -> str:
    return run_one(*args)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run")
    run.add_argument("--out", type=Path, required=True)
    run.add_argument("--seeds", default="0-2")
    run.add_argument("--entries", default=",".join(ENTRIES))
    run.add_argument("--workers", type=int, default=2)
    rep = sub.add_parser("report")
    rep.add_argument("--runs", type=Path, required=True)
    rep.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    if args.command == "report":
        print(json.dumps(report(args.runs, args.out)["gate0"], indent=1))
        return
    low, _, high = args.seeds.partition("-")
    seeds = range(int(low), int(high or low) + 1)
    args.out.mkdir(parents=True, exist_ok=True)
    jobs = [(entry, seed, args.out) for seed in seeds for entry in args.entries.split(",")]
    with mp.get_context("spawn").Pool(args.workers, maxtasksperchild=1) as pool:
        for message in pool.imap_unordered(_run_star, jobs):
            print(message, flush=True)


if __name__ == "__main__":
    main()
