"""
Per-task evaluation of a trained model on a fixed set of tasks: a table, a dict and a bar chart.

    python -m sb3_complementary.multitask.evaluate --model logs/model.zip --algo complementary_dqn --family cartpole

The evaluation set is the whole family (or the variants asked for), every task with the same
number of episodes and the same seed, so the numbers of two runs, or of two points of one run,
are comparable (docs/design.md, "Pitfalls and their guards": keep the evaluation tasks fixed).
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.evaluation import evaluate_policy
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.off_policy_algorithm import OffPolicyAlgorithm
from stable_baselines3.common.vec_env import DummyVecEnv

from sb3_complementary.multitask.multitask_env import MultiTaskEnv
from sb3_complementary.multitask.variants import TaskFamily, get_family, list_families

#: What :func:`evaluate_multitask` evaluates on: a family (name or object), a MultiTaskEnv, a
#: sequence of envs / env factories, or a mapping task name → env / env factory.
TaskSet = str | TaskFamily | MultiTaskEnv | Sequence[gym.Env | Callable[[], gym.Env]] | Mapping[str, Any]


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


def _one_hot_expected(model_space: spaces.Space, env: MultiTaskEnv) -> bool:
    """Whether the model was trained on observations with the one-hot task block appended."""
    base = env.base_observation_space
    return (
        isinstance(model_space, spaces.Box)
        and isinstance(base, spaces.Box)
        and len(base.shape) == 1
        and model_space.shape == (base.shape[0] + env.n_task_ids,)
    )


def _same_kind_and_shape(a: spaces.Space, b: spaces.Space) -> bool:
    return type(a) is type(b) and a.shape == b.shape and (not isinstance(a, spaces.Discrete) or a == b)


def _as_multitask_env(tasks: TaskSet) -> tuple[MultiTaskEnv, bool, str]:
    """:return: ``(env, created here (so ours to close and adapt), source name)``."""
    if isinstance(tasks, MultiTaskEnv):
        return tasks, False, tasks.family.name if tasks.family is not None else "custom"
    if isinstance(tasks, (str, TaskFamily)):
        family = get_family(tasks)
        return MultiTaskEnv(family, schedule="round_robin"), True, family.name
    if isinstance(tasks, Mapping):
        env = MultiTaskEnv(list(tasks.values()), schedule="round_robin", task_names=[str(k) for k in tasks])
        return env, True, "custom"
    if isinstance(tasks, Sequence):
        return MultiTaskEnv(list(tasks), schedule="round_robin"), True, "custom"  # type: ignore[arg-type]
    raise ValueError(
        "family_or_envs must be a family name, a TaskFamily, a MultiTaskEnv, or a sequence/mapping of "
        f"envs or env factories; got {tasks!r} (registered families: {list_families()})"
    )


def evaluate_multitask(
    model: BaseAlgorithm,
    family_or_envs: TaskSet,
    n_eval_episodes: int = 10,
    deterministic: bool = True,
    seed: int = 0,
    plot_path: str | Path | None = None,
    task_id_in_obs: bool | None = None,
) -> MultiTaskEvaluation:
    """
    Evaluate a model on every task of a fixed task set, ``n_eval_episodes`` episodes each.

    Each task runs on one ``MultiTaskEnv`` pinned to that task (so the observation, one-hot task
    block included, is the one the model was trained on), reseeded with ``seed`` before its
    episodes: every task, and every call, sees the same start states.

    :param model: A trained SB3 model (any algorithm with ``predict``).
    :param family_or_envs: A family name (``"cartpole"``) or :class:`TaskFamily` (all its
        variants), a :class:`MultiTaskEnv` (its tasks, e.g. a ``variants=[...]`` subset), a sequence
        of envs / env factories, or a mapping task name → env / env factory.
    :param n_eval_episodes: Episodes per task.
    :param deterministic: Deterministic actions.
    :param seed: Seed of every task's evaluation env.
    :param plot_path: If given, save the per-task bar chart there (PNG).
    :param task_id_in_obs: Whether to append the one-hot task block to observations; None:
        whenever the model's observation space has room for it.
    :return: The per-task scores and the aggregate mean and IQM.
    :raises ValueError: on an unknown family, or when the model's observation space does not
        match the tasks' (naming both spaces).
    """
    if isinstance(n_eval_episodes, bool) or not isinstance(n_eval_episodes, int) or n_eval_episodes < 1:
        raise ValueError(f"n_eval_episodes must be a positive int, got {n_eval_episodes!r}")
    env, owned, source = _as_multitask_env(family_or_envs)
    try:
        if owned:
            wanted = _one_hot_expected(model.observation_space, env) if task_id_in_obs is None else task_id_in_obs
            env.set_task_id_in_obs(wanted)
        # Shapes, not bounds: predict() only needs observations of the shape the network takes.
        if not _same_kind_and_shape(model.observation_space, env.observation_space):
            raise ValueError(
                f"the model observes {model.observation_space} but the tasks give {env.observation_space} "
                f"(task_id_in_obs={env.task_id_in_obs}); evaluate on the task set the model was trained on"
            )
        vec_env = DummyVecEnv([lambda: Monitor(env)])
        scores = []
        for task_id, name in zip(env.task_ids, env.task_names, strict=True):
            env.set_task(task_id)
            vec_env.seed(seed)
            returns, lengths = evaluate_policy(
                model,
                vec_env,
                n_eval_episodes=n_eval_episodes,
                deterministic=deterministic,
                return_episode_rewards=True,
            )
            scores.append(
                TaskScore(
                    task_id=int(task_id),
                    name=name,
                    returns=tuple(float(r) for r in np.asarray(returns).reshape(-1)),
                    lengths=tuple(int(n) for n in np.asarray(lengths).reshape(-1)),
                )
            )
    finally:
        env.set_task(None)
        if owned:
            env.close()
    result = MultiTaskEvaluation(
        tasks=tuple(scores),
        source=source,
        n_eval_episodes=n_eval_episodes,
        deterministic=deterministic,
        seed=seed,
    )
    if plot_path is not None:
        result.plot(plot_path)
    return result


# --------------------------------------------------------------------------- command line

#: ``--algo`` names; anything else must be a ``module:Class`` path.
ALGORITHMS: dict[str, str] = {
    "complementary_dqn": "sb3_complementary:ComplementaryDQN",
    "prioritized_dqn": "sb3_complementary:PrioritizedDQN",
    "complementary_qrdqn": "sb3_complementary:ComplementaryQRDQN",
    "prioritized_qrdqn": "sb3_complementary:PrioritizedQRDQN",
    "complementary_sac": "sb3_complementary:ComplementarySAC",
    "prioritized_sac": "sb3_complementary:PrioritizedSAC",
    "complementary_td3": "sb3_complementary:ComplementaryTD3",
    "prioritized_td3": "sb3_complementary:PrioritizedTD3",
    "complementary_ddpg": "sb3_complementary:ComplementaryDDPG",
    "complementary_tqc": "sb3_complementary:ComplementaryTQC",
    "complementary_crossq": "sb3_complementary:ComplementaryCrossQ",
    "dqn": "stable_baselines3:DQN",
    "ppo": "stable_baselines3:PPO",
    "a2c": "stable_baselines3:A2C",
    "sac": "stable_baselines3:SAC",
    "td3": "stable_baselines3:TD3",
    "ddpg": "stable_baselines3:DDPG",
    "qrdqn": "sb3_contrib:QRDQN",
}


def algorithm_class(algo: str) -> type[BaseAlgorithm]:
    """
    :param algo: An ``--algo`` name of :data:`ALGORITHMS` or a ``module:Class`` path.
    :return: The algorithm class.
    :raises ValueError: listing the known names when ``algo`` is neither.
    """
    path = ALGORITHMS.get(algo, algo)
    module_name, sep, attr = path.partition(":")
    if not sep:
        raise ValueError(f"unknown algorithm {algo!r}; choose from {sorted(ALGORITHMS)} or give 'module:Class'")
    try:
        cls = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise ValueError(f"cannot import algorithm {algo!r} ({path}): {exc}") from exc
    if not (isinstance(cls, type) and issubclass(cls, BaseAlgorithm)):
        raise ValueError(f"{path} is not an SB3 algorithm class")
    return cls


def load_for_evaluation(algo: str, path: str | Path, device: str = "cpu") -> BaseAlgorithm:
    """
    Load a saved model for evaluation only: an off-policy model gets a one-transition replay
    buffer (as rl-zoo3's ``enjoy`` does), since evaluation never replays.

    :param algo: See :func:`algorithm_class`.
    :param path: The ``.zip`` file.
    :param device: Torch device.
    :return: The model.
    """
    cls = algorithm_class(algo)
    extra: dict[str, Any] = {}
    if issubclass(cls, OffPolicyAlgorithm):
        extra = {"buffer_size": 1, "optimize_memory_usage": False}
    return cls.load(path, device=device, **extra)


def build_parser(prog: str = "python -m sb3_complementary.multitask.evaluate") -> argparse.ArgumentParser:
    """
    :param prog: Program name shown in usage and errors.
    :return: The ``evaluate-multitask`` argument parser.
    """
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Evaluate a saved model on every variant of a task family: per-task mean ± std, "
        "aggregate mean and IQM, optional bar chart and JSON.",
    )
    parser.add_argument("--model", required=True, help="saved model (.zip)")
    parser.add_argument("--algo", default="complementary_dqn", help=f"one of {sorted(ALGORITHMS)} or module:Class")
    parser.add_argument("--family", default="cartpole", help=f"task family (built in: {list_families()})")
    parser.add_argument("--variants", default=None, help="comma-separated variant names or ids (default: all)")
    parser.add_argument("-n", "--n-eval-episodes", type=int, default=10, help="episodes per task")
    parser.add_argument("--seed", type=int, default=0, help="seed of every task's evaluation env")
    parser.add_argument("--stochastic", action="store_true", help="sample actions instead of deterministic ones")
    parser.add_argument(
        "--task-id-in-obs",
        choices=("auto", "yes", "no"),
        default="auto",
        help="append the one-hot task block to observations (auto: if the model's observation space has room)",
    )
    parser.add_argument("--plot", default=None, help="write the per-task bar chart to this PNG")
    parser.add_argument("--json", default=None, help="write the result (episodes included) to this JSON file")
    parser.add_argument("--device", default="cpu", help="torch device of the loaded model")
    parser.add_argument(
        "--import",
        dest="imports",
        action="append",
        default=[],
        metavar="MODULE",
        help="import this module first (e.g. one that calls register_family); repeatable",
    )
    return parser


def main(argv: Sequence[str] | None = None, prog: str | None = None) -> int:
    """
    Command line entry point (also ``sb3-complementary evaluate-multitask``).

    :param argv: Arguments after the program name (``sys.argv[1:]`` when None).
    :param prog: Program name for usage and errors (default: the ``python -m`` form).
    :return: Exit status (0 on success; bad input exits with argparse's status 2 and a message).
    """
    parser = build_parser() if prog is None else build_parser(prog)
    args = parser.parse_args(argv)
    try:
        for module in args.imports:
            importlib.import_module(module)
        family = get_family(args.family)
        variants: list[int | str] | None = None
        if args.variants:
            variants = [int(v) if v.strip().isdigit() else v.strip() for v in args.variants.split(",")]
        model = load_for_evaluation(args.algo, args.model, device=args.device)
        env = MultiTaskEnv(family, schedule="round_robin", variants=variants)
        flag = {"auto": None, "yes": True, "no": False}[args.task_id_in_obs]
        env.set_task_id_in_obs(_one_hot_expected(model.observation_space, env) if flag is None else flag)
        try:
            result = evaluate_multitask(
                model,
                env,
                n_eval_episodes=args.n_eval_episodes,
                deterministic=not args.stochastic,
                seed=args.seed,
                plot_path=args.plot,
            )
        finally:
            env.close()
    except (ValueError, FileNotFoundError) as exc:
        parser.error(str(exc))
    print(result.format_table())
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(result.to_dict(), indent=1) + "\n")
    if args.plot:
        print(f"bar chart: {args.plot}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
