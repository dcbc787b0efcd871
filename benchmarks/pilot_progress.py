"""
Pilot of a learning-progress signal (issue 31, gate 0), before anything is built on it.

Question: does "what one gradient step did for learning, on data it did not train on" rank a
uniform draw against the default's selected draw the way whole-run returns do? The 10-seed study
puts selection ahead on CartPole-drift (1.72x the control) and MountainCar-v0 (0.376 against
0.280), and behind on LunarLander-v3 (0.44 against 0.82).

Within one run, each gradient step flips a fair coin: the **uniform** arm picks its batch
uniformly from the step's candidate pool, the **selected** arm picks it as the default does
(density ratio x fresh |TD|, a quarter uniform). Both arms draw the same pool of 4 batches from
the buffer, so only the pick differs. Around the step, with the TD targets held fixed (computed
once from the target network before the step), the Huber TD loss is measured on three held-out
sets the step did not train on:

- ``pool``: the pool's unselected candidates (no extra gather; but the selected arm leaves the
  low-|TD| candidates behind, so the two arms are measured on different data);
- ``buffer``: an independent uniform sample of the buffer (2 batches): progress on everything stored;
- ``fast``: a uniform sample of the fast memory (the 2,000 freshest transitions, 2 batches):
  progress on what the current policy does.

The signal is ``loss_before - loss_after`` (positive: the step lowered the held-out loss), and
its relative form divided by ``loss_before``. A rising Q-value is never counted.

    python -m benchmarks.pilot_progress run --out docs/benchmarks/pilot-progress/runs --seeds 0-2 --workers 2
    python -m benchmarks.pilot_progress report --runs docs/benchmarks/pilot-progress/runs \
        --out docs/benchmarks/pilot-progress

Each run writes ``<entry>__seed<k>.npz`` (one row per gradient step) when it finishes; finished runs
are skipped, so the pilot resumes. ``report`` writes ``summary.json`` and ``signal.png``.
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

#: Entries of the study matrix, with the part of the budget the pilot trains and the sign the returns give
#: (+1: selection ahead of the control in the 10-seed study; -1: behind).
ENTRIES: dict[str, dict[str, Any]] = {
    "CartPole-drift": {"fraction": 1.0, "expected": +1},
    "MountainCar-v0": {"fraction": 0.5, "expected": +1},
    "LunarLander-v3": {"fraction": 0.5, "expected": -1},
}
STUDY_MATRIX = Path(__file__).resolve().parent / "matrices" / "study.yml"
SETS = ("pool", "buffer", "fast")


def _pilot_class() -> type:
    import torch as th
    from torch.nn import functional as F

    from sb3_complementary import ComplementaryDQN

    class ProgressPilotDQN(ComplementaryDQN):  # type: ignore[misc]
        """The default ComplementaryDQN whose train step flips a coin between a uniform and a selected pick."""

        def _setup_model(self) -> None:
            super()._setup_model()
            self.pilot_rng = np.random.default_rng(12345 + (self.seed or 0))
            self.pilot_rows: list[list[float]] = []

        def _held_out_loss(self, samples: Any, target: th.Tensor) -> np.ndarray:
            with th.no_grad():
                q = th.gather(self.q_net(samples.observations), dim=1, index=samples.actions.long())
                return F.smooth_l1_loss(q, target, reduction="none").cpu().numpy().reshape(-1)

        def _fixed_target(self, samples: Any) -> th.Tensor:
            with th.no_grad():
                return self._td_target(samples)

        def train(self, gradient_steps: int, batch_size: int = 100) -> None:
            self.policy.set_training_mode(True)
            self._update_learning_rate(self.policy.optimizer)
            self._begin_weighted_train()
            buffer = self.replay_buffer
            env = self._vec_normalize_env
            losses = []
            for _ in range(gradient_steps):
                selected = bool(self.pilot_rng.random() < 0.5)
                candidates = buffer.uniform_indices(self.candidate_pool * batch_size)
                pool, candidates = buffer.gather_pool(candidates, env=env)
                pool_target = self._fixed_target(pool)
                td_pool = self._current_td_abs(pool)
                if selected:
                    scores = self.importance.candidate_scores(self, candidates, td_pool)
                else:
                    scores = np.ones(len(candidates), dtype=np.float32)
                batch, rates = buffer.select_from_candidates(candidates, pool, scores, batch_size)
                unpicked = ~np.isin(candidates, batch.indices)
                valid = buffer.valid_indices()
                buffer_rows = valid[self.pilot_rng.integers(0, len(valid), size=2 * batch_size)]
                fast = buffer.recent_indices(self.fast_memory)
                fast_rows = fast[self.pilot_rng.integers(0, len(fast), size=2 * batch_size)]
                held = {
                    "buffer": buffer.get_samples_at(buffer_rows, env),
                    "fast": buffer.get_samples_at(fast_rows, env),
                }
                targets = {name: self._fixed_target(samples) for name, samples in held.items()}
                before = {name: self._held_out_loss(held[name], targets[name]) for name in held}
                before["pool"] = self._held_out_loss(pool, pool_target)[unpicked]

                data = batch.samples
                target_q_values = self._td_target(data)
                current_q_values = th.gather(self.q_net(data.observations), dim=1, index=data.actions.long())
                per_sample_loss = F.smooth_l1_loss(current_q_values, target_q_values, reduction="none")
                loss = (batch.weights * per_sample_loss).mean()
                losses.append(loss.item())
                td_errors = (current_q_values - target_q_values).detach()
                self.policy.optimizer.zero_grad()
                loss.backward()
                th.nn.utils.clip_grad_norm_(self.policy.parameters(), self.max_grad_norm)
                self.policy.optimizer.step()

                after = {name: self._held_out_loss(held[name], targets[name]) for name in held}
                after["pool"] = self._held_out_loss(pool, pool_target)[unpicked]
                row = [float(self.num_timesteps), float(selected), float(1.0 / np.mean(rates**2))]
                for name in SETS:
                    row += [float(before[name].mean()), float(after[name].mean())]
                row.append(float(td_errors.abs().mean()))
                self.pilot_rows.append(row)
                self._replay_feedback(batch, td_errors.abs().cpu().numpy().reshape(-1), None)
            self._n_updates += gradient_steps
            self.logger.record("train/loss", np.mean(losses))

    return ProgressPilotDQN


#: Columns of a run's ``steps`` array.
COLUMNS = ("timestep", "selected", "ess", *(f"{s}_{w}" for s in SETS for w in ("before", "after")), "batch_td")


def run_one(entry_name: str, seed: int, out: Path) -> str:
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    import torch as th

    th.set_num_threads(1)
    from benchmarks.harness.envs import make_env
    from benchmarks.harness.hyperparams import constructor_kwargs
    from benchmarks.harness.matrix_yaml import load_matrix

    path = out / f"{entry_name}__seed{seed}.npz"
    if path.exists():
        return f"{path.name}: done before"
    entry = next(e for e in load_matrix(STUDY_MATRIX).suite if e.name == entry_name)
    budget = int(entry.budget * ENTRIES[entry_name]["fraction"])
    env = make_env(entry.env_id, entry.env_kwargs, entry.wrappers)
    model = _pilot_class()(
        entry.hyperparams.policy, env, seed=seed, device="cpu", **constructor_kwargs(entry.hyperparams)
    )
    start = time.process_time()
    model.learn(budget)
    steps = np.asarray(model.pilot_rows, dtype=np.float64)
    tmp = path.with_suffix(".tmp.npz")
    np.savez_compressed(
        tmp,
        steps=steps,
        columns=np.array(COLUMNS),
        budget=budget,
        full_budget=entry.budget,
        seed=seed,
        cpu_seconds=time.process_time() - start,
    )
    tmp.replace(path)
    return f"{path.name}: {len(steps)} gradient steps, {time.process_time() - start:.0f} CPU s"


def _bootstrap_diff(sel: np.ndarray, uni: np.ndarray, rng: np.random.Generator, n: int = 2000) -> tuple[float, float]:
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
    fig, axes = plt.subplots(len(SETS), len(ENTRIES), figsize=(4.2 * len(ENTRIES), 3.0 * len(SETS)), squeeze=False)
    for col, (entry, spec) in enumerate(ENTRIES.items()):
        files = sorted(runs.glob(f"{entry}__seed*.npz"))
        result: dict[str, Any] = {"expected_sign": spec["expected"], "seeds": [], "sets": {}}
        per_seed: dict[str, list[np.ndarray]] = {s: [] for s in SETS}
        for file in files:
            data = np.load(file)
            steps, full_budget = data["steps"], int(data["full_budget"])
            result["seeds"].append(int(data["seed"]))
            c = {name: i for i, name in enumerate(data["columns"])}
            t, sel = steps[:, c["timestep"]], steps[:, c["selected"]] > 0.5
            windows = np.minimum((t / full_budget * 10).astype(int), 9)  # tenths of the full budget
            for s in SETS:
                before, after = steps[:, c[f"{s}_before"]], steps[:, c[f"{s}_after"]]
                # NaN where the held-out set was empty (a pool that every slot picked, in a nearly empty buffer).
                rel = (before - after) / np.maximum(before, 1e-8)
                keep = np.isfinite(rel)
                rel, t_s, sel_s, windows_s = rel[keep], t[keep], sel[keep], windows[keep]
                diffs = np.full(10, np.nan)
                for w in range(10):
                    m = windows_s == w
                    if (m & sel_s).sum() > 10 and (m & ~sel_s).sum() > 10:
                        diffs[w] = rel[m & sel_s].mean() - rel[m & ~sel_s].mean()
                per_seed[s].append(diffs)
                early = t_s <= 0.5 * full_budget  # the pilot's "early": the first half of the study's budget
                low, high = _bootstrap_diff(rel[early & sel_s], rel[early & ~sel_s], rng)
                result["sets"].setdefault(s, {"early_diff": [], "early_ci": []})
                result["sets"][s]["early_diff"].append(float(rel[early & sel_s].mean() - rel[early & ~sel_s].mean()))
                result["sets"][s]["early_ci"].append([low, high])
        for row, s in enumerate(SETS):
            if not per_seed[s]:
                continue
            diffs = np.array(per_seed[s])
            info = result["sets"][s]
            signs = np.sign(info["early_diff"])
            info["seeds_ranking_as_returns"] = int((signs == spec["expected"]).sum())
            info["mean_early_diff"] = float(np.mean(info["early_diff"]))
            info["ranks_as_returns"] = bool(np.sign(info["mean_early_diff"]) == spec["expected"])
            info["windows_mean_diff"] = [None if np.isnan(v) else float(v) for v in np.nanmean(diffs, axis=0)]
            ax = axes[row][col]
            x = (np.arange(10) + 0.5) * 10
            for d in diffs:
                ax.plot(x, d, color="grey", alpha=0.4, lw=0.8)
            ax.plot(x, np.nanmean(diffs, axis=0), color="C0" if spec["expected"] > 0 else "C3", lw=2)
            ax.axhline(0, color="k", lw=0.6)
            ax.set_title(f"{entry}: {s}", fontsize=9)
            ax.set_xlabel("% of the study's budget", fontsize=8)
            if col == 0:
                ax.set_ylabel("relative progress,\nselected - uniform", fontsize=8)
        summary["entries"][entry] = result
    for s in SETS:
        ranked = [e for e, r in summary["entries"].items() if r["sets"].get(s, {}).get("ranks_as_returns")]
        summary.setdefault("gate0", {})[s] = {"entries_ranked_as_returns": ranked, "passes": len(ranked) >= 2}
        # Descriptive only, chosen after the first runs were seen: the first tenth of the budget alone.
        first = [
            e
            for e, r in summary["entries"].items()
            if s in r["sets"] and np.sign(r["sets"][s]["windows_mean_diff"][0] or 0.0) == r["expected_sign"]
        ]
        summary.setdefault("first_tenth_post_hoc", {})[s] = first
    fig.suptitle("Learning-progress pilot: selected minus uniform arm (grey: seeds; line: mean)", fontsize=10)
    fig.tight_layout()
    out.mkdir(parents=True, exist_ok=True)
    fig.savefig(out / "signal.png", dpi=110)
    (out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    (out / "README.md").write_text(render_page(summary))
    return summary


def render_page(summary: dict[str, Any]) -> str:
    """The pilot's page (generated: never edit it by hand)."""
    lines = [
        "# Learning-progress pilot (gate 0)",
        "",
        "Generated by `python -m benchmarks.pilot_progress report --runs docs/benchmarks/pilot-progress/runs "
        "--out docs/benchmarks/pilot-progress` from the run files in `runs/` (made by "
        "`python -m benchmarks.pilot_progress run --out docs/benchmarks/pilot-progress/runs --seeds 0-2 --workers 2`). "
        "What the pilot measures, and why: the docstring of `benchmarks/pilot_progress.py` and "
        "[the history](../history.md).",
        "",
        "Each gradient step picks its batch from the same uniform pool of 4 batches, by a fair coin either "
        "uniformly or as the default does. The signal is the step's relative drop of the Huber TD loss, "
        "targets held fixed, on data it did not train on. Each cell: selected arm minus uniform arm, mean "
        "over the gradient steps of the first half of the study's budget, one value per seed (with its "
        "95% bootstrap CI over steps). The expected sign is the study's: + where selection led the "
        "returns (CartPole-drift, MountainCar-v0), - where it fell (LunarLander-v3).",
        "",
        "| entry | expected | seeds | held-out set | selected - uniform, per seed [95% CI] | ranks as the returns |",
        "|---|---|---|---|---|---|",
    ]
    for entry, result in summary["entries"].items():
        for name, info in result["sets"].items():
            cells = ", ".join(
                f"{d:+.4f} [{lo:+.4f}, {hi:+.4f}]"
                for d, (lo, hi) in zip(info["early_diff"], info["early_ci"], strict=True)
            )
            sign = "+" if result["expected_sign"] > 0 else "-"
            seeds = ", ".join(str(k) for k in result["seeds"])
            verdict = "yes" if info.get("ranks_as_returns") else "**no**"
            lines.append(f"| {entry} | {sign} | {seeds} | {name} | {cells} | {verdict} |")
    lines += ["", "**Gate 0** (it ranks the arms as the returns do on at least 2 of the 3 entries):", ""]
    for name, gate in summary["gate0"].items():
        ranked = ", ".join(gate["entries_ranked_as_returns"]) or "none"
        lines.append(f"- `{name}`: {'passes' if gate['passes'] else '**fails**'} (ranked as the returns: {ranked})")
    lines += [
        "",
        "Per tenth of the budget (mean over seeds; chosen after the first runs were seen, so descriptive "
        "only), the first tenth ranks as the returns on: "
        + "; ".join(f"`{k}`: {', '.join(v) or 'none'}" for k, v in summary["first_tenth_post_hoc"].items())
        + ".",
        "",
        "![selected minus uniform, per tenth of the budget](signal.png)",
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
    # Longest first, seed-major, so that a stopped pilot has whole seeds of every entry.
    order = sorted(args.entries.split(","), key=lambda e: -ENTRIES[e]["fraction"])
    jobs = [(entry, seed, args.out) for seed in seeds for entry in order]
    with mp.get_context("spawn").Pool(args.workers, maxtasksperchild=1) as pool:
        for message in pool.imap_unordered(_run_star, jobs):
            print(message, flush=True)


if __name__ == "__main__":
    main()
