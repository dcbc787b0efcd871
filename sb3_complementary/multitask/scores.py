"""
The scores of a per-task evaluation (:func:`~sb3_complementary.multitask.evaluation.evaluate_multitask`):
one :class:`TaskScore` per task, and :class:`MultiTaskEvaluation` with the aggregates, as a table, a dict
and a bar chart.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np


@dataclass(frozen=True)
class TaskScore:
    """
    Evaluation episodes of one task.

    :param task_id: The task's id (the family's id, or the position of an explicit env).
    :param name: The task's name.
    :param returns: Episode returns, in the order they finished.
    :param lengths: Episode lengths, same order.
    """

    task_id: int
    name: str
    returns: tuple[float, ...]
    lengths: tuple[int, ...]

    @property
    def mean(self) -> float:
        """Mean episode return."""
        return float(np.mean(self.returns))

    @property
    def std(self) -> float:
        """Standard deviation of the episode returns (population, as SB3's ``evaluate_policy``)."""
        return float(np.std(self.returns))


def interquartile_mean(values: Sequence[float] | np.ndarray) -> float:
    """
    IQM: the mean of the middle 50% of the values (``scipy.stats.trim_mean(values, 0.25)``),
    the aggregate that rliable recommends: robust to a few outlying episodes, less noisy than the median.

    :param values: Scores.
    :return: Their interquartile mean.
    """
    try:
        from scipy.stats import trim_mean
    except ImportError as exc:  # pragma: no cover - scipy comes with the [benchmark] extra
        raise ImportError("the IQM needs scipy: pip install scipy (or sb3-complementary[benchmark])") from exc
    return float(trim_mean(np.asarray(values, dtype=np.float64), 0.25))


@dataclass(frozen=True)
class MultiTaskEvaluation:
    """
    Result of :func:`evaluate_multitask`: one :class:`TaskScore` per task plus the aggregates.

    ``print(result)`` shows the table; :meth:`to_dict` is JSON-safe; :meth:`plot` writes the bar chart.

    :param tasks: Per-task scores, in evaluation order.
    :param source: The family's name, or ``"custom"`` for explicit envs.
    :param n_eval_episodes: Episodes per task.
    :param deterministic: Whether actions were deterministic.
    :param seed: Seed of every task's evaluation env.
    """

    tasks: tuple[TaskScore, ...]
    source: str
    n_eval_episodes: int
    deterministic: bool
    seed: int

    @property
    def mean(self) -> float:
        """Aggregate mean: the mean of the per-task means (every task weighs the same)."""
        return float(np.mean([task.mean for task in self.tasks]))

    @property
    def iqm(self) -> float:
        """Aggregate IQM over every evaluation episode of every task (each task contributes ``n_eval_episodes``)."""
        return interquartile_mean(np.concatenate([task.returns for task in self.tasks]))

    def format_table(self) -> str:
        """:return: The per-task table and the aggregates, as printable text."""
        mode = "deterministic" if self.deterministic else "stochastic"
        width = max(4, *(len(task.name) for task in self.tasks))
        lines = [
            f"Multi-task evaluation: {self.source}, {self.n_eval_episodes} {mode} episodes per task, seed {self.seed}",
            f"{'id':>3} | {'task':<{width}} | {'mean return':>11} | {'std':>8} | {'mean length':>11}",
            f"{'-' * 3}-+-{'-' * width}-+-{'-' * 11}-+-{'-' * 8}-+-{'-' * 11}",
        ]
        for task in self.tasks:
            lines.append(
                f"{task.task_id:>3} | {task.name:<{width}} | {task.mean:11.2f} | {task.std:8.2f} | "
                f"{np.mean(task.lengths):11.1f}"
            )
        lines.append(f"aggregate mean (of the {len(self.tasks)} task means): {self.mean:.2f}")
        lines.append(f"aggregate IQM (all {sum(len(t.returns) for t in self.tasks)} episodes): {self.iqm:.2f}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.format_table()

    def to_dict(self) -> dict[str, Any]:
        """:return: JSON-safe representation (per-task episodes included)."""
        return {
            "source": self.source,
            "n_eval_episodes": self.n_eval_episodes,
            "deterministic": self.deterministic,
            "seed": self.seed,
            "mean": self.mean,
            "iqm": self.iqm,
            "tasks": [
                {
                    "task_id": task.task_id,
                    "name": task.name,
                    "mean": task.mean,
                    "std": task.std,
                    "returns": list(task.returns),
                    "lengths": list(task.lengths),
                }
                for task in self.tasks
            ],
        }

    def plot(self, path: str | Path, title: str | None = None) -> Path:
        """
        Save a bar chart of the per-task means (± std), with the aggregate mean and IQM as lines.

        Draws on a matplotlib ``Figure`` with the Agg canvas directly, so it neither needs a display
        nor changes the backend of a caller who uses pyplot.

        :param path: PNG file to write (folders are created).
        :param title: Chart title (default: the source and the episode count).
        :return: The path written.
        """
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure

        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        figure = Figure(figsize=(max(4.0, 1.1 * len(self.tasks) + 1.5), 3.6))
        FigureCanvasAgg(figure)
        axes = figure.add_subplot(1, 1, 1)
        x = np.arange(len(self.tasks))
        axes.bar(x, [t.mean for t in self.tasks], yerr=[t.std for t in self.tasks], capsize=4, color="tab:blue")
        axes.axhline(self.mean, color="tab:orange", linestyle="--", label=f"mean of tasks {self.mean:.1f}")
        axes.axhline(self.iqm, color="tab:green", linestyle=":", label=f"IQM {self.iqm:.1f}")
        axes.set_xticks(x, [t.name for t in self.tasks], rotation=30, ha="right")
        axes.set_ylabel("episode return")
        axes.set_title(title or f"{self.source}: {self.n_eval_episodes} episodes per task (mean ± std)")
        axes.legend(loc="best", fontsize="small")
        figure.tight_layout()
        figure.savefig(path, dpi=120)
        return path
