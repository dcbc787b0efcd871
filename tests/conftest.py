"""Shared helpers for the sb3-complementary test suite: tiny settings, toy envs and a logger that remembers."""

from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch as th
from gymnasium import spaces
from stable_baselines3.common.logger import KVWriter, Logger

from sb3_complementary import ComplementaryDQN, ComplementaryReplayBuffer, PrioritizedDQN
from sb3_complementary.multitask import variants as variants_module

#: Small, fast DQN settings shared by the drop-in and save/load tests.
TINY_DQN: dict[str, Any] = {
    "learning_starts": 50,
    "batch_size": 16,
    "buffer_size": 500,
    "train_freq": 4,
    "gradient_steps": 1,
    "target_update_interval": 50,
    "policy_kwargs": {"net_arch": [16]},
    "device": "cpu",
}

#: Extractor settings small enough that the extractor fits and re-scores several times in a few hundred steps.
TINY_EXTRACTOR: dict[str, Any] = {
    "extractor_kwargs": {
        "net_arch": [16],
        "train_freq": 100,
        "gradient_steps": 2,
        "batch_size": 32,
        "refresh_interval": 100,
    }
}


def tiny_extractor(**keys: Any) -> dict[str, Any]:
    """:data:`TINY_EXTRACTOR` with some of its ``extractor_kwargs`` keys changed or added (a fresh dict)."""
    return {"extractor_kwargs": {**TINY_EXTRACTOR["extractor_kwargs"], **keys}}


#: The density-ratio configuration, the DQN family's default until 2026-12-07: the extractor's ratio
#: x fresh |TD| on the default pool of 4. Tests of the extractor pass it (the default fits none).
DENSITY_RATIO: dict[str, Any] = {
    "contribution": "density_ratio",
    "epsilon": 1e-3,
    "uniform_fraction": 0.25,
    "score_floor": 0.01,
}

#: The sum-tree path: the density ratio's draws by the scores of the last re-score, no candidate pool.
TREE_REPLAY: dict[str, Any] = {**DENSITY_RATIO, "alpha": 0.6, "candidate_pool": 0}

ALGOS = {
    # The constructor defaults (LaBER: fresh |TD| on a pool of 4, no extractor fitted).
    "complementary-default": (ComplementaryDQN, {}),
    # The density ratio x fresh |TD| on the pool, with a tiny schedule.
    "complementary-density": (ComplementaryDQN, {**DENSITY_RATIO, **TINY_EXTRACTOR}),
    "complementary-tree": (ComplementaryDQN, {**TREE_REPLAY, **TINY_EXTRACTOR}),
    "complementary-fresh-td": (ComplementaryDQN, {**DENSITY_RATIO, "contribution": "fresh_td"}),
    "complementary-alpha0": (ComplementaryDQN, {**DENSITY_RATIO, "alpha": 0.0, **TINY_EXTRACTOR}),
    "prioritized": (PrioritizedDQN, {}),
}


def make_model(algo: str, env: Any, policy: str = "MlpPolicy", **overrides: Any) -> Any:
    """Build one of :data:`ALGOS` with the tiny settings; ``overrides`` win."""
    cls, extra = ALGOS[algo]
    kwargs = {**TINY_DQN, **extra, **overrides}
    return cls(policy, env, **kwargs)


class RecordingWriter(KVWriter):
    """A logger output that keeps every dumped key/value, so tests can read what was logged."""

    def __init__(self) -> None:
        self.records: list[dict[str, Any]] = []

    def write(self, key_values: dict[str, Any], key_excluded: dict[str, Any], step: int = 0) -> None:
        self.records.append(dict(key_values))

    def keys(self) -> set[str]:
        return {key for record in self.records for key in record}

    def values(self, key: str) -> list[Any]:
        return [record[key] for record in self.records if key in record]


@pytest.fixture
def recording_logger() -> tuple[Logger, RecordingWriter]:
    writer = RecordingWriter()
    return Logger(folder=None, output_formats=[writer]), writer


class ObsSpaceEnv(gym.Env):
    """
    A tiny episodic env with a given observation space and ``Discrete(2)`` actions.

    Reward 1 when the action equals the parity of the observation's sum, episodes last
    ``ep_length`` steps and end by truncation (so ``TimeLimit.truncated``-style timeouts occur).
    """

    def __init__(self, observation_space: spaces.Space, ep_length: int = 20) -> None:
        self.observation_space = observation_space
        self.action_space = spaces.Discrete(2)
        self.ep_length = ep_length
        self._t = 0
        self._obs: Any = None

    def _target(self) -> int:
        return int(np.sum(self._obs)) % 2

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[Any, dict]:
        super().reset(seed=seed)
        if seed is not None:
            self.observation_space.seed(seed)
        self._t = 0
        self._obs = self.observation_space.sample()
        return self._obs, {}

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict]:
        reward = float(int(action) == self._target())
        self._t += 1
        self._obs = self.observation_space.sample()
        return self._obs, reward, False, self._t >= self.ep_length, {}


def fill_buffer(
    buffer: ComplementaryReplayBuffer,
    n_rows: int,
    episode_lengths: tuple[int, ...] | None = None,
    timeout_every: int = 0,
    seed: int = 0,
) -> None:
    """
    Add ``n_rows`` rows of distinctive synthetic transitions (one per env per row).

    Observations encode ``(row counter, env)`` so tests can tell which transition came back.
    Env ``e`` ends an episode every ``episode_lengths[e]`` steps; when ``timeout_every`` divides
    the step count of a finished episode's end, the end is flagged as a time-limit truncation.
    """
    rng = np.random.default_rng(seed)
    n_envs = buffer.n_envs
    lengths = episode_lengths or (5,) * n_envs
    obs_shape = buffer.obs_shape
    episode_steps = np.zeros(n_envs, dtype=np.int64)
    for t in range(n_rows):
        obs = np.zeros((n_envs, *obs_shape), dtype=np.float32)
        obs.reshape(n_envs, -1)[:, 0] = t
        obs.reshape(n_envs, -1)[:, -1] = np.arange(n_envs)
        next_obs = obs + 0.5
        actions = rng.integers(0, buffer.action_space.n, size=(n_envs, 1))
        rewards = rng.normal(size=n_envs).astype(np.float32)
        episode_steps += 1
        dones = np.array([episode_steps[e] >= lengths[e] for e in range(n_envs)])
        infos = []
        for e in range(n_envs):
            truncated = bool(dones[e] and timeout_every and (t + 1) % timeout_every == 0)
            infos.append({"TimeLimit.truncated": truncated})
        episode_steps[dones] = 0
        buffer.add(obs, next_obs, actions, rewards, dones.astype(np.float32), infos)


@pytest.fixture(autouse=True)
def _few_threads() -> None:
    """The suite runs two workers on two cores: keep torch from oversubscribing them."""
    th.set_num_threads(1)


@pytest.fixture
def scratch_registry(monkeypatch):
    """Task families registered by a test (or a docs example) disappear after it."""
    monkeypatch.setattr(variants_module, "_FAMILIES", dict(variants_module._FAMILIES))
