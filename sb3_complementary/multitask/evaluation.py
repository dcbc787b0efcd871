"""
Per-task evaluation of a trained model on a fixed set of tasks (:func:`evaluate_multitask`).

The evaluation set is the whole family (or the variants asked for), every task with the same
number of episodes and the same seed, so the numbers of two runs, or of two points of one run,
are comparable (docs/design.md, "Pitfalls and their guards": keep the evaluation tasks fixed).
Its command line is :mod:`sb3_complementary.multitask.evaluate`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.evaluation import evaluate_policy
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.vec_env import DummyVecEnv

from sb3_complementary.multitask.multitask_env import MultiTaskEnv
from sb3_complementary.multitask.scores import MultiTaskEvaluation, TaskScore
from sb3_complementary.multitask.variants import TaskFamily, get_family, list_families

#: What :func:`evaluate_multitask` evaluates on: a family (name or object), a MultiTaskEnv, a
#: sequence of envs / env factories, or a mapping task name → env / env factory.
TaskSet = str | TaskFamily | MultiTaskEnv | Sequence[gym.Env | Callable[[], gym.Env]] | Mapping[str, Any]


def one_hot_expected(model_space: spaces.Space, env: MultiTaskEnv) -> bool:
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
            wanted = one_hot_expected(model.observation_space, env) if task_id_in_obs is None else task_id_in_obs
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
