"""
``MultiTaskEnv``: one gymnasium env over several tasks, switching task at reset by a schedule.

The current task is reported as ``info["task_id"]`` (and ``info["task_name"]``) at reset and at
every step, which is where the replay buffer's task-id feature comes from
(the buffer stores ``info["task_id"]`` in ``task_ids``), and
optionally as a one-hot block appended to the observation, for policies that should condition
on the task.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any, SupportsFloat, cast

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.utils import EzPickle

from sb3_complementary.common.validation import check_choice, check_range
from sb3_complementary.multitask.variants import TaskFamily, get_family

#: The task schedules: which task the next episode runs.
SCHEDULES = ("uniform", "round_robin", "sequential")

#: What ``tasks`` may be: a family (name or object), or explicit envs / env factories.
TaskSource = str | TaskFamily | Sequence[gym.Env | Callable[[], gym.Env]]


def _build(task: gym.Env | Callable[[], gym.Env]) -> gym.Env:
    """An explicit task: the env itself, or what its factory returns."""
    return task if isinstance(task, gym.Env) else task()


class MultiTaskEnv(gym.Env, EzPickle):
    """
    Several tasks behind one env; the task changes only at ``reset``, chosen by ``schedule``.

    Schedules (``reset(seed=...)`` restarts each of them, so what follows a seeded reset is
    reproducible, e.g. a fixed evaluation set):

    - ``"uniform"``: each episode draws its task uniformly at random (from the env's ``np_random``);
    - ``"round_robin"``: tasks in turn, one episode each, starting with the first;
    - ``"sequential"``: the lifelong-learning curriculum: task ``k`` for the ``k``-th block of
      ``block_steps`` env steps of *this* env (the switch waits for the episode to end, and never
      skips a task), and the last task after all blocks. Under a VecEnv of ``n`` copies, a block
      is ``n * block_steps`` model steps.

    All tasks must share one observation space and one action space. A task keeps its own env
    instance (and RNG) across episodes; after a seeded reset every task's env is reseeded with
    the same seed at its next episode, so a task's trajectories under a fixed action sequence
    equal those of the plain variant env reset with that seed.

    Picklable like gymnasium's Box2D envs (``EzPickle``: rebuilt from the constructor arguments),
    and buildable inside ``make_vec_env`` / ``SubprocVecEnv``: pass a :class:`TaskFamily` object
    rather than its name for families registered only in the parent process, and env factories
    rather than env instances.

    :param tasks: A registered family name (``"cartpole"``), a :class:`TaskFamily`, or a sequence
        of envs / zero-argument env factories (task ids are then their positions).
    :param schedule: ``"uniform"``, ``"round_robin"`` or ``"sequential"``.
    :param block_steps: Env steps per task of the ``"sequential"`` schedule (required there, refused elsewhere).
    :param variants: Subset and order of the tasks to use (ids or names); default all, in id order.
        Reported task ids stay the family's ids, so a subset's logs line up with the full family's.
    :param task_id_in_obs: Append a one-hot of the task id (width: the family's number of tasks)
        to the observation; needs a flat ``Box`` observation space.
    :param task_names: Names of explicit envs (default ``task_0``, ``task_1``, ...).
    :param render_mode: Passed to the family's ``gym.make`` (ignored for explicit envs).
    """

    def __init__(
        self,
        tasks: TaskSource = "cartpole",
        schedule: str = "uniform",
        block_steps: int | None = None,
        variants: Sequence[int | str] | None = None,
        task_id_in_obs: bool = False,
        task_names: Sequence[str] | None = None,
        render_mode: str | None = None,
    ) -> None:
        EzPickle.__init__(self, tasks, schedule, block_steps, variants, task_id_in_obs, task_names, render_mode)
        check_choice("schedule", schedule, SCHEDULES)
        if schedule == "sequential":
            if block_steps is None or isinstance(block_steps, bool) or not isinstance(block_steps, int):
                raise ValueError(f"block_steps must be a positive int for schedule='sequential', got {block_steps!r}")
            check_range("block_steps", block_steps, low=1)
        elif block_steps is not None:
            raise ValueError(f"block_steps only applies to schedule='sequential' (schedule={schedule!r})")
        self.schedule = schedule
        self.block_steps = block_steps
        self.family: TaskFamily | None = None

        all_ids, all_names, builders = self._resolve(tasks, task_names, render_mode)
        positions = self._select(variants, all_ids, all_names)
        self.task_ids: tuple[int, ...] = tuple(all_ids[p] for p in positions)
        self.task_names: tuple[str, ...] = tuple(all_names[p] for p in positions)
        self.n_task_ids = len(all_ids)  # width of the one-hot: the whole family, not the subset
        self.envs: list[gym.Env] = []
        try:
            for p in positions:
                self.envs.append(builders[p]())
            self._check_spaces()
        except BaseException:
            self.close()
            raise

        base = self.envs[0]
        self.action_space = base.action_space
        #: The tasks' own observation space (without the one-hot block).
        self.base_observation_space = base.observation_space
        self.task_id_in_obs = False
        self.observation_space = base.observation_space
        self.set_task_id_in_obs(task_id_in_obs)
        self.metadata = dict(base.metadata)
        self.render_mode = base.render_mode
        self._active = 0
        self._episodes = 0
        self._steps = 0
        self._fixed: int | None = None
        self._pending_seeds: list[int | None] = [None] * len(self.envs)

    # ------------------------------------------------------------------ construction helpers
    def _resolve(
        self, tasks: TaskSource, task_names: Sequence[str] | None, render_mode: str | None
    ) -> tuple[list[int], list[str], list[Callable[[], gym.Env]]]:
        """:return: ids, names and builders of every available task."""
        if isinstance(tasks, (str, TaskFamily)):
            if task_names is not None:
                raise ValueError("task_names is only for explicit envs: a family names its variants")
            family = get_family(tasks)
            self.family = family
            extra = {} if render_mode is None else {"render_mode": render_mode}
            builders: list[Callable[[], gym.Env]] = [
                functools.partial(family.make, v.task_id, **extra) for v in family.variants
            ]
            return [v.task_id for v in family.variants], family.names, builders
        if not isinstance(tasks, Sequence) or len(tasks) == 0:
            raise ValueError(
                f"tasks must be a family name, a TaskFamily or a non-empty sequence of envs/factories, got {tasks!r}"
            )
        for k, task in enumerate(tasks):
            if not isinstance(task, gym.Env) and not callable(task):
                raise ValueError(f"tasks[{k}] must be a gymnasium Env or a zero-argument env factory, got {task!r}")
        names = [f"task_{k}" for k in range(len(tasks))] if task_names is None else [str(n) for n in task_names]
        if len(names) != len(tasks) or len(set(names)) != len(names):
            raise ValueError(f"task_names must be {len(tasks)} distinct names, got {task_names!r}")
        builders = [functools.partial(_build, task) for task in cast(Sequence[gym.Env | Callable[[], gym.Env]], tasks)]
        return list(range(len(tasks))), names, builders

    @staticmethod
    def _select(variants: Sequence[int | str] | None, ids: list[int], names: list[str]) -> list[int]:
        """:return: Positions (into ``ids``) of the selected tasks, in the given order."""
        if variants is None:
            return list(range(len(ids)))
        if isinstance(variants, (str, int)) or len(variants) == 0:
            raise ValueError(f"variants must be a non-empty list of task ids or names, got {variants!r}")
        positions = []
        for key in variants:
            if isinstance(key, str) and key in names:
                positions.append(names.index(key))
            elif isinstance(key, int) and not isinstance(key, bool) and key in ids:
                positions.append(ids.index(key))
            else:
                valid = ", ".join(f"{i}={n}" for i, n in zip(ids, names, strict=True))
                raise ValueError(f"unknown variant {key!r}; valid (id=name): {valid}")
        if len(set(positions)) != len(positions):
            raise ValueError(f"variants lists a task twice: {list(variants)!r}")
        return positions

    def _check_spaces(self) -> None:
        first, name = self.envs[0], self.task_names[0]
        for env, other in zip(self.envs[1:], self.task_names[1:], strict=True):
            for kind in ("observation_space", "action_space"):
                mine, theirs = getattr(first, kind), getattr(env, kind)
                if mine != theirs:
                    raise ValueError(
                        f"every task of a MultiTaskEnv must share one {kind.replace('_', ' ')}: "
                        f"task {name!r} has {mine}, task {other!r} has {theirs}"
                    )

    def _observation_space(self, space: spaces.Space) -> spaces.Box:
        """The base ``Box`` with one ``[0, 1]`` column per task id appended."""
        if not isinstance(space, spaces.Box) or len(space.shape) != 1:
            raise ValueError(f"task_id_in_obs=True needs a flat Box observation space, got {space}")
        n = self.n_task_ids
        return spaces.Box(
            low=np.concatenate([space.low, np.zeros(n, dtype=space.dtype)]),
            high=np.concatenate([space.high, np.ones(n, dtype=space.dtype)]),
            dtype=space.dtype,
        )

    def set_task_id_in_obs(self, enabled: bool) -> None:
        """
        Switch the one-hot task block of the observation on or off (before any wrapper or VecEnv
        has read ``observation_space``); :func:`~sb3_complementary.multitask.evaluate_multitask`
        uses it to match a model trained with or without the block.

        :param enabled: Append the one-hot block.
        """
        self.observation_space = (
            self._observation_space(self.base_observation_space) if enabled else self.base_observation_space
        )
        self.task_id_in_obs = bool(enabled)

    # ------------------------------------------------------------------ task bookkeeping
    @property
    def n_tasks(self) -> int:
        """Number of tasks this env switches between."""
        return len(self.envs)

    @property
    def task_id(self) -> int:
        """Id of the current task (the family's id; the position for explicit envs)."""
        return self.task_ids[self._active]

    @property
    def task_name(self) -> str:
        """Name of the current task."""
        return self.task_names[self._active]

    def set_task(self, task: int | str | None) -> None:
        """
        Pin every following episode to one task (by id or name), or un-pin it with ``None``.

        Evaluation uses it to run each task in turn on one env (whose observation space, one-hot
        included, is the one the model was trained on). Pinning does not move the schedule.

        :param task: Task id, task name or None.
        """
        self._fixed = None if task is None else self._select([task], list(self.task_ids), list(self.task_names))[0]

    def _next_position(self) -> int:
        if self._fixed is not None:
            return self._fixed
        if self.schedule == "uniform":
            return int(self.np_random.integers(self.n_tasks))
        if self.schedule == "round_robin":
            return self._episodes % self.n_tasks
        assert self.block_steps is not None
        if self._episodes == 0:
            return 0
        due = min(self._steps // self.block_steps, self.n_tasks - 1)
        return min(due, self._active + 1)  # an episode longer than a block must not make the curriculum skip a task

    def _observe(self, obs: Any) -> Any:
        if not self.task_id_in_obs:
            return obs
        one_hot = np.zeros(self.n_task_ids, dtype=self.observation_space.dtype)
        one_hot[self.task_id] = 1
        return np.concatenate([np.asarray(obs, dtype=self.observation_space.dtype), one_hot])

    def _tag(self, info: dict[str, Any]) -> dict[str, Any]:
        return {**info, "task_id": self.task_id, "task_name": self.task_name}

    # ------------------------------------------------------------------ gymnasium API
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        """
        Start an episode of the task the schedule picks.

        :param seed: Restarts the schedule and reseeds the task sampler and every task's env.
        :param options: Passed to the task's env; the key ``"task"`` (id or name) overrides the
            schedule for this one episode.
        :return: ``(observation, info)`` with ``info["task_id"]`` and ``info["task_name"]``.
        """
        super().reset(seed=seed)
        if seed is not None:
            self._episodes = 0
            self._steps = 0
            self._pending_seeds = [seed] * self.n_tasks
        options = dict(options or {})
        forced = options.pop("task", None)
        if forced is not None:
            self._active = self._select([forced], list(self.task_ids), list(self.task_names))[0]
        else:
            self._active = self._next_position()
        self._episodes += 1
        env_seed, self._pending_seeds[self._active] = self._pending_seeds[self._active], None
        obs, info = self.envs[self._active].reset(seed=env_seed, options=options or None)
        return self._observe(obs), self._tag(info)

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        """Step the current task; ``info`` carries ``task_id`` and ``task_name``."""
        obs, reward, terminated, truncated, info = self.envs[self._active].step(action)
        self._steps += 1
        return self._observe(obs), reward, terminated, truncated, self._tag(info)

    def render(self) -> Any:
        """Render the current task."""
        return self.envs[self._active].render()

    def close(self) -> None:
        """Close every task's env."""
        for env in getattr(self, "envs", []):
            env.close()
        super().close()
