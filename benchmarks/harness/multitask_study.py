"""
Per-task analysis of the multi-task study's run files: per-task learning curves, final per-task
scores, forgetting under a sequential curriculum, and who the replay serves (each task's share of
replay draws against its share of the stored data, recorded for weighted replays).

    python -m benchmarks.multitask_study --runs docs/multitask/runs --out docs/multitask/per_task.md

The study runs through the benchmark runner (``benchmarks/matrices/multitask.yml``),
whose run files keep every evaluation episode's return, in the order the episodes finished. A
multi-task entry evaluates on a ``MultiTaskEnv`` with the ``round_robin`` schedule (its
``eval_env_kwargs``) and a single env, reseeded before each evaluation: episode ``i`` of an
evaluation therefore ran task ``i mod K`` of the evaluation env's task order, which is how the
returns are split per task here.

Forgetting of task ``k`` under the ``sequential`` schedule is its score at the first evaluation
at or after the end of its block (``(k + 1) * block_steps``: "just after it was trained") minus
its score at the last evaluation ("at the end"); positive means the agent got worse at it.
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.harness.envs import import_object_path
from benchmarks.harness.metrics import mean_pm_std
from benchmarks.harness.store import scan_runs
from sb3_complementary.multitask.multitask_env import MultiTaskEnv


@dataclass(frozen=True)
class PerTaskCurve:
    """
    One run's evaluation returns, split per task.

    :param run_id: The run.
    :param contender: Contender name.
    :param entry: Suite entry name.
    :param seed: Seed.
    :param timesteps: ``(T,)`` env steps of the evaluation points.
    :param task_ids: ``(K,)`` task ids, in the evaluation env's order (the columns of ``scores``).
    :param task_names: Their names.
    :param scores: ``(T, K)`` mean return of each task at each evaluation point.
    :param schedule: The training env's schedule.
    :param block_steps: The training env's block length (``"sequential"`` only).
    :param train_order: Task ids in the training env's order (the curriculum's order for ``"sequential"``).
    :param replay_shares: ``(T, K, 2)`` each task's share of replay draws and of the stored data at
        each evaluation point (columns as in ``scores``; 0 for a task with no stored data), or
        ``None`` for a plain uniform buffer (DQN), which records none.
    """

    run_id: str
    contender: str
    entry: str
    seed: int
    timesteps: np.ndarray
    task_ids: tuple[int, ...]
    task_names: tuple[str, ...]
    scores: np.ndarray
    schedule: str
    block_steps: int | None
    train_order: tuple[int, ...]
    replay_shares: np.ndarray | None = None

    def column(self, task_id: int) -> np.ndarray:
        """:return: ``(T,)`` scores of one task."""
        return self.scores[:, self.task_ids.index(task_id)]


@dataclass(frozen=True)
class TaskForgetting:
    """
    Forgetting of one task in one sequential-curriculum run.

    :param task_id: The task.
    :param name: Its name.
    :param trained_at: Env step of the evaluation just after its block ended.
    :param after: Its score then.
    :param end: Its score at the last evaluation.
    """

    task_id: int
    name: str
    trained_at: int
    after: float
    end: float

    @property
    def forgetting(self) -> float:
        """``after - end``: how much worse the agent got at the task after moving on (negative: it improved)."""
        return self.after - self.end


def _describe(kwargs: Mapping[str, Any]) -> tuple[tuple[int, ...], tuple[str, ...], str, int | None]:
    """:return: Task ids, task names, schedule and block length of the ``MultiTaskEnv`` these kwargs build."""
    env = MultiTaskEnv(**kwargs)
    env.close()
    return env.task_ids, env.task_names, env.schedule, env.block_steps


def per_task_curve(record: Mapping[str, Any]) -> PerTaskCurve:
    """
    Split a finished run's evaluation returns per task.

    :param record: A run file's record (``status`` ``"done"``) of a ``MultiTaskEnv`` suite entry.
    :return: Its per-task curve.
    :raises ValueError: if the entry is not a ``MultiTaskEnv`` evaluated round-robin on one env.
    """
    env = record["env"]
    run_id = record.get("run_id", "?")
    if record.get("status") != "done":
        raise ValueError(f"run {run_id}: status {record.get('status')!r}, not done")
    env_id = str(env["env_id"])
    target = import_object_path(env_id) if ":" in env_id else None
    if not (isinstance(target, type) and issubclass(target, MultiTaskEnv)):
        raise ValueError(f"run {run_id}: env {env_id!r} is not a MultiTaskEnv")
    train_kwargs = dict(env["env_kwargs"])
    eval_kwargs = {**train_kwargs, **(env.get("eval_env_kwargs") or {})}
    if eval_kwargs.get("schedule", "uniform") != "round_robin":
        raise ValueError(
            f"run {run_id}: per-task scores need a round-robin evaluation env "
            "(eval_env_kwargs: {schedule: round_robin}) to know which task each episode ran"
        )
    task_ids, task_names, _, _ = _describe(eval_kwargs)
    train_ids, _, schedule, block_steps = _describe(train_kwargs)
    curve = record["curve"]
    k = len(task_ids)
    scores = np.full((len(curve["timesteps"]), k), np.nan)
    for t, returns in enumerate(curve["returns"]):
        values = np.asarray(returns, dtype=np.float64)
        for position in range(k):
            scores[t, position] = values[position::k].mean() if len(values[position::k]) else np.nan
    replay_shares = None
    if "task_shares" in curve:
        replay_shares = np.zeros((len(curve["task_shares"]), k, 2))
        for t, shares in enumerate(curve["task_shares"]):
            for task, pair in shares.items():
                replay_shares[t, task_ids.index(int(task))] = pair
    return PerTaskCurve(
        run_id=str(run_id),
        contender=str(record["contender"]["name"]),
        entry=str(env["name"]),
        seed=int(record["seed"]),
        timesteps=np.asarray(curve["timesteps"], dtype=np.int64),
        task_ids=task_ids,
        task_names=task_names,
        scores=scores,
        schedule=schedule,
        block_steps=block_steps,
        train_order=train_ids,
        replay_shares=replay_shares,
    )


def forgetting(curve: PerTaskCurve) -> list[TaskForgetting]:
    """
    Forgetting of every task of a sequential-curriculum run whose block ended before the last evaluation.

    :param curve: A run with the ``"sequential"`` training schedule.
    :return: One entry per task, in curriculum order (the last task's forgetting is 0 by construction).
    :raises ValueError: if the run did not train with the sequential schedule.
    """
    if curve.schedule != "sequential" or curve.block_steps is None:
        raise ValueError(f"run {curve.run_id}: forgetting needs the sequential schedule, got {curve.schedule!r}")
    out = []
    for position, task_id in enumerate(curve.train_order):
        block_end = (position + 1) * curve.block_steps
        after = np.flatnonzero(curve.timesteps >= block_end)
        if len(after) == 0:
            continue
        scores = curve.column(task_id)
        out.append(
            TaskForgetting(
                task_id=task_id,
                name=curve.task_names[curve.task_ids.index(task_id)],
                trained_at=int(curve.timesteps[after[0]]),
                after=float(scores[after[0]]),
                end=float(scores[-1]),
            )
        )
    return out


def load_curves(runs_dir: str | Path) -> list[PerTaskCurve]:
    """
    :param runs_dir: A runs folder of the benchmark runner.
    :return: The per-task curves of its finished ``MultiTaskEnv`` runs (other runs are skipped).
    """
    records, _ = scan_runs(runs_dir)
    curves = []
    for record in records:
        try:
            curves.append(per_task_curve(record.data))
        except ValueError:
            continue
    return curves


def _pm(values: Sequence[float]) -> str:
    return mean_pm_std(list(values), 1) if len(values) else "n/a"


def summary_markdown(curves: Sequence[PerTaskCurve]) -> str:
    """
    Markdown tables: final per-task score (mean ± std over seeds) per entry and contender, and,
    for sequential entries, each task's forgetting and the mean forgetting over all but the last task.

    :param curves: Per-task curves (any mix of entries, contenders and seeds).
    :return: The tables.
    """
    by_entry: dict[str, dict[str, list[PerTaskCurve]]] = defaultdict(lambda: defaultdict(list))
    for curve in curves:
        by_entry[curve.entry][curve.contender].append(curve)
    lines: list[str] = []
    for entry in sorted(by_entry):
        contenders = by_entry[entry]
        first = next(iter(contenders.values()))[0]
        seeds = sorted({c.seed for runs in contenders.values() for c in runs})
        lines += [
            f"### {entry}: final score per task",
            "",
            f"Mean ± std over seeds {seeds} of the last evaluation ({int(first.timesteps[-1])} steps).",
            "",
            "| contender | " + " | ".join(first.task_names) + " | mean of tasks |",
            "|---" * (len(first.task_names) + 2) + "|",
        ]
        for name in sorted(contenders):
            runs = contenders[name]
            cells = [_pm([run.scores[-1, k] for run in runs]) for k in range(len(first.task_ids))]
            lines.append(f"| {name} | " + " | ".join(cells) + f" | {_pm([np.mean(r.scores[-1]) for r in runs])} |")
        lines.append("")
        lines += _replay_share_lines(entry, first, contenders)
        if first.schedule != "sequential":
            continue
        order = [first.task_names[first.task_ids.index(t)] for t in first.train_order]
        lines += [
            f"### {entry}: forgetting (score just after the task's block − score at the end)",
            "",
            f"Curriculum order: {', '.join(order)}; blocks of {first.block_steps} steps. Positive: forgotten.",
            "",
            "| contender | " + " | ".join(order[:-1]) + " | mean |",
            "|---" * len(order) + "|---|",
        ]
        for name in sorted(contenders):
            # The last task has nothing after it to forget by: it is left out of the table and the mean.
            per_run = [
                {f.task_id: f.forgetting for f in forgetting(run) if f.task_id != run.train_order[-1]}
                for run in contenders[name]
            ]
            cells = [_pm([f[t] for f in per_run if t in f]) for t in first.train_order[:-1]]
            mean = _pm([float(np.mean(list(f.values()))) for f in per_run if f])
            lines.append(f"| {name} | " + " | ".join(cells) + f" | {mean} |")
        lines.append("")
    return "\n".join(lines)


def _replay_share_lines(entry: str, first: PerTaskCurve, contenders: Mapping[str, Sequence[PerTaskCurve]]) -> list[str]:
    """Table of each task's replay share vs data share at the last evaluation (weighted replays only)."""
    weighted = {name: runs for name, runs in contenders.items() if all(r.replay_shares is not None for r in runs)}
    if not weighted:
        return []
    lines = [
        f"### {entry}: who the replay serves at the end",
        "",
        "Share of replay draws / share of the stored data per task at the last evaluation, mean over seeds "
        "(the buffer's sampling distribution, uniform share included; DQN's uniform replay draws as the data).",
        "",
        "| contender | " + " | ".join(first.task_names) + " |",
        "|---" * (len(first.task_names) + 1) + "|",
    ]
    for name in sorted(weighted):
        final = np.mean([run.replay_shares[-1] for run in weighted[name] if run.replay_shares is not None], axis=0)
        lines.append(f"| {name} | " + " | ".join(f"{sample:.2f} / {data:.2f}" for sample, data in final) + " |")
    return [*lines, ""]


def plot_per_task_curves(curves: Sequence[PerTaskCurve], out_dir: str | Path) -> list[Path]:
    """
    One PNG per suite entry: a panel per task, a line per contender (mean over seeds), dashed
    lines at the block ends of a sequential curriculum.

    :param curves: Per-task curves.
    :param out_dir: Folder of the PNGs (``per_task_<entry>.png``).
    :return: The paths written.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    by_entry: dict[str, dict[str, list[PerTaskCurve]]] = defaultdict(lambda: defaultdict(list))
    for curve in curves:
        by_entry[curve.entry][curve.contender].append(curve)
    paths = []
    for entry, contenders in sorted(by_entry.items()):
        first = next(iter(contenders.values()))[0]
        k = len(first.task_ids)
        figure = Figure(figsize=(3.2 * k, 3.2))
        FigureCanvasAgg(figure)
        axes = figure.subplots(1, k, sharey=True, squeeze=False)[0]
        for position, ax in enumerate(axes):
            for name in sorted(contenders):
                runs = contenders[name]
                mean = np.nanmean([run.scores[:, position] for run in runs], axis=0)
                ax.plot(runs[0].timesteps, mean, label=f"{name} (n={len(runs)})")
            if first.schedule == "sequential" and first.block_steps:
                for block in range(1, len(first.train_order)):
                    ax.axvline(block * first.block_steps, color="grey", linestyle="--", linewidth=0.8)
            ax.set_title(first.task_names[position])
            ax.set_xlabel("env steps")
        axes[0].set_ylabel("mean eval return")
        axes[-1].legend(fontsize="small", loc="best")
        figure.suptitle(f"{entry}: per-task evaluation return (mean over seeds)")
        figure.tight_layout()
        path = out / f"per_task_{entry}.png"
        figure.savefig(path, dpi=110)
        paths.append(path)
    return paths


def main(argv: Sequence[str] | None = None) -> int:
    """
    Command line: print (or write) the per-task tables of a runs folder, optionally with plots.

    :param argv: Arguments after the program name.
    :return: Exit status (1 when the folder holds no finished multi-task run).
    """
    parser = argparse.ArgumentParser(prog="python -m benchmarks.multitask_study", description=__doc__)
    parser.add_argument("--runs", required=True, help="runs folder written by python -m benchmarks.run")
    parser.add_argument("--out", default=None, help="write the markdown tables here instead of printing them")
    parser.add_argument("--plots", default=None, help="write per-task curve PNGs into this folder")
    args = parser.parse_args(argv)
    curves = load_curves(args.runs)
    if not curves:
        print(f"no finished MultiTaskEnv run with a round-robin evaluation env in {args.runs}", file=sys.stderr)
        return 1
    text = summary_markdown(curves)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(text + "\n")
    else:
        print(text)
    if args.plots:
        for path in plot_per_task_curves(curves, args.plots):
            print(f"wrote {path}")
    return 0
