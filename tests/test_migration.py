"""Copying a plain SB3 buffer: the vectorised ``load_rows()`` records exactly what adding the rows one by one does."""

from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from stable_baselines3.common.buffers import DictReplayBuffer, ReplayBuffer

from sb3_complementary import ComplementaryDictReplayBuffer, ComplementaryReplayBuffer

OBS = gym.spaces.Box(-10, 10, shape=(3,), dtype=np.float32)
DICT_OBS = gym.spaces.Dict({"a": OBS, "b": gym.spaces.Box(-1, 1, shape=(2,), dtype=np.float32)})
ACTIONS = gym.spaces.Discrete(3)


def plain_buffer(n_rows: int, size: int, n_envs: int, memory: bool, dict_obs: bool) -> ReplayBuffer:
    """A plain SB3 buffer after n_rows adds of random transitions with episode ends and timeouts."""
    cls = DictReplayBuffer if dict_obs else ReplayBuffer
    space = DICT_OBS if dict_obs else OBS
    # SB3 refuses timeout handling with the memory-optimised layout.
    kwargs = {"n_envs": n_envs, "optimize_memory_usage": memory, "handle_timeout_termination": not memory}
    buffer = cls(size, space, ACTIONS, device="cpu", **kwargs)
    rng = np.random.default_rng(0)

    def obs() -> Any:
        if dict_obs:
            return {k: rng.normal(size=(n_envs, *s.shape)).astype(np.float32) for k, s in DICT_OBS.spaces.items()}
        return rng.normal(size=(n_envs, 3)).astype(np.float32)

    for _ in range(n_rows):
        dones = rng.random(n_envs) < 0.15
        infos = [{"TimeLimit.truncated": bool(d and rng.random() < 0.3)} for d in dones]
        buffer.add(obs(), obs(), rng.integers(0, 3, size=(n_envs, 1)), rng.normal(size=n_envs), dones, infos)
    return buffer


def one_by_one(new: ComplementaryReplayBuffer, old: ReplayBuffer) -> None:
    """The reference: every row of the old ring, oldest first, through add()."""
    order = (np.arange(old.size()) + (old.pos if old.full else 0)) % old.buffer_size
    for row in order:
        if isinstance(old.observations, dict):
            obs = {k: v[row] for k, v in old.observations.items()}
            next_obs = {k: v[row] for k, v in old.next_observations.items()}
        else:
            obs = old.observations[row]
            memory = old.optimize_memory_usage
            next_obs = old.observations[(row + 1) % old.buffer_size] if memory else old.next_observations[row]
        infos = [{"TimeLimit.truncated": bool(t)} for t in old.timeouts[row]]
        new.add(obs, next_obs, old.actions[row], old.rewards[row], old.dones[row], infos)


@pytest.mark.parametrize("n_envs", [1, 2])
@pytest.mark.parametrize("n_rows", [30, 70])  # the 50-row ring has not / has wrapped
@pytest.mark.parametrize(("memory", "dict_obs"), [(False, False), (True, False), (False, True)])
def test_load_rows_equals_adding_the_rows_one_by_one(n_envs, n_rows, memory, dict_obs):
    old = plain_buffer(n_rows, 50 * n_envs, n_envs, memory, dict_obs)
    cls = ComplementaryDictReplayBuffer if dict_obs else ComplementaryReplayBuffer
    kwargs = {
        "device": "cpu",
        "n_envs": n_envs,
        "optimize_memory_usage": memory,
        "handle_timeout_termination": not memory,
    }
    space = DICT_OBS if dict_obs else OBS
    fast, slow = cls(50 * n_envs, space, ACTIONS, **kwargs), cls(50 * n_envs, space, ACTIONS, **kwargs)
    fast._require_tree()  # a tree built before the copy is stale after it: load_rows must drop it
    fast.load_rows(old)
    assert fast.tree is None, "load_rows keeps a tree of the rows it overwrote (it is rebuilt when a draw reads it)"
    one_by_one(slow, old)
    storages = ["actions", "rewards", "dones", "timeouts", "observations"] + ([] if memory else ["next_observations"])
    for name in storages:
        a, b = getattr(fast, name), getattr(slow, name)
        for key in a if isinstance(a, dict) else [None]:
            np.testing.assert_array_equal(a if key is None else a[key], b if key is None else b[key], err_msg=name)
    np.testing.assert_array_equal(fast.terminals, slow.terminals, err_msg="terminals")
    np.testing.assert_array_equal(fast.task_ids, slow.task_ids, err_msg="task_ids")
    np.testing.assert_array_equal(fast.scores, slow.scores)
    assert np.all(fast.scores[fast.valid_indices()] == fast._initial_score()), "every copied row has the initial score"
    # The trees a draw would build from the stored scores (neither buffer has drawn yet).
    np.testing.assert_array_equal(fast._require_tree().leaves, slow._require_tree().leaves)
    assert (fast.pos, fast.full, fast.n_added) == (slow.pos, slow.full, slow.n_added)
