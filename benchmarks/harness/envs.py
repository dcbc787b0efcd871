"""
Environments of the suite.

A suite entry names its environment by a registered gymnasium id (``"CartPole-v1"``), by
gymnasium's ``"module:EnvId"`` form, which imports the module that registers the id first
(``"gymnasium_robotics:FetchReach-v4"``), or by a ``"module:Callable"`` entry point
(``"stable_baselines3.common.envs:BitFlippingEnv"``) for environments that are not registered.
Optional wrappers are applied in order.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Mapping, Sequence
from typing import Any

import gymnasium as gym
import numpy as np


def import_object_path(path: str) -> Any:
    """
    Import ``"module:attr"`` (``attr`` may be dotted).

    :param path: The path.
    :return: The object.
    :raises ValueError: if the path is not of that form.
    :raises ImportError: if the module cannot be imported.
    :raises AttributeError: if the attribute does not exist.
    """
    module_name, sep, attr = path.partition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"{path!r} is not a 'module:attr' path")
    obj: Any = importlib.import_module(module_name)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


def registered_by_module(env_id: str) -> bool:
    """
    Whether ``env_id`` is gymnasium's ``"module:EnvId"`` form: importing ``module`` registers ``EnvId``.

    :param env_id: An environment name that contains ``":"``.
    :return: True if the part after ``":"`` is a registered id once the module is imported.
    :raises ImportError: if the module cannot be imported.
    """
    module_name, _, name = env_id.partition(":")
    importlib.import_module(module_name)
    return name in gym.registry


def check_env_id(env_id: str, where: str) -> None:
    """
    Check that an environment exists without building it.

    :param env_id: A registered gymnasium id, ``"module:EnvId"`` or a ``"module:Callable"`` entry point.
    :param where: Entry name for the error message.
    :raises ValueError: if the environment is unknown.
    """
    if ":" in env_id:
        try:
            if registered_by_module(env_id):
                return
            obj = import_object_path(env_id)
        except (ImportError, AttributeError, ValueError) as exc:
            raise ValueError(f"{where}: unknown environment {env_id!r}: {exc}") from exc
        if not callable(obj):
            raise ValueError(f"{where}: unknown environment {env_id!r}: not callable")
        return
    if env_id not in gym.registry:
        raise ValueError(
            f"{where}: unknown environment id {env_id!r} (not registered in gymnasium; "
            "use 'module:Callable' for unregistered environments)"
        )


def make_env(
    env_id: str,
    env_kwargs: Mapping[str, Any] | None = None,
    wrappers: Sequence[str] = (),
) -> gym.Env:
    """
    Build one environment instance.

    :param env_id: A registered gymnasium id, ``"module:EnvId"`` or a ``"module:Callable"`` entry point.
    :param env_kwargs: Constructor keyword arguments.
    :param wrappers: ``"module:Wrapper"`` paths, applied in order (the first is innermost).
    :return: The environment (not seeded: callers seed through ``reset`` or the model).
    """
    kwargs = dict(env_kwargs or {})
    if ":" in env_id and not registered_by_module(env_id):
        env: gym.Env = import_object_path(env_id)(**kwargs)
    else:
        env = gym.make(env_id, **kwargs)
    for wrapper in wrappers:
        env = import_object_path(wrapper)(env)
    return env


def random_policy_returns(
    env_id: str,
    env_kwargs: Mapping[str, Any] | None,
    wrappers: Sequence[str],
    episodes: int,
    seed: int,
) -> np.ndarray:
    """
    Episode returns of a uniform-random policy (R_random of the normalised score).

    The env is reset with ``seed`` once, then reset without a seed between episodes, and the
    actions are drawn from ``action_space`` seeded with ``seed``, so the result is reproducible.

    :param env_id: See :func:`make_env`.
    :param env_kwargs: See :func:`make_env`.
    :param wrappers: See :func:`make_env`.
    :param episodes: Number of episodes.
    :param seed: Seed of the env and of the action sampling.
    :return: Returns, shape ``(episodes,)``.
    """
    env = make_env(env_id, env_kwargs, wrappers)
    env.action_space.seed(seed)
    returns = np.zeros(episodes, dtype=np.float64)
    try:
        for episode in range(episodes):
            env.reset(seed=seed if episode == 0 else None)
            done = False
            while not done:
                _, reward, terminated, truncated, _ = env.step(env.action_space.sample())
                returns[episode] += float(reward)
                done = bool(terminated or truncated)
    finally:
        env.close()
    return returns
