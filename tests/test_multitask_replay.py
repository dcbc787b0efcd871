"""Task-aware replay: the task-id feature, and the per-task shares a density-ratio model logs at each re-score."""

import numpy as np
import pytest
from gymnasium import spaces
from stable_baselines3.common.env_util import make_vec_env

from sb3_complementary import ComplementaryDQN, ComplementaryReplayBuffer, MultiTaskEnv
from tests.conftest import DENSITY_RATIO, TINY_DQN, TINY_EXTRACTOR


def test_task_shares():
    """The buffer's per-task sampling and data shares, from the stored task ids and the scores."""
    buffer = ComplementaryReplayBuffer(
        4, spaces.Box(-1, 1, (1,)), spaces.Discrete(2), device="cpu", alpha=1.0, epsilon=1e-9
    )
    assert buffer.task_shares() == {}  # an empty buffer
    for task in (0, 0, 0, 1):
        obs = np.zeros((1, 1), dtype=np.float32)
        buffer.add(obs, obs, np.zeros((1, 1)), np.zeros(1), np.zeros(1), [{"task_id": task}])
    buffer.set_all_scores(buffer.valid_indices(), np.array([0.1, 0.1, 0.1, 0.7]))
    shares = buffer.task_shares()
    assert shares.keys() == {0, 1}
    assert shares[0] == pytest.approx((0.3, 0.75)) and shares[1] == pytest.approx((0.7, 0.25))
    assert buffer.task_shares(np.array([3])) == {1: (1.0, 1.0)}  # one task among the given indices
    assert buffer.tree is None  # a query, from the stored scores: it builds no tree


def tiny_multitask_model(**overrides):
    """A density-ratio ComplementaryDQN (its re-scores log the shares) on the five CartPole tasks, round robin."""
    env = make_vec_env(MultiTaskEnv, n_envs=2, seed=0, env_kwargs={"tasks": "cartpole", "schedule": "round_robin"})
    return ComplementaryDQN("MlpPolicy", env, seed=0, **{**TINY_DQN, **DENSITY_RATIO, **TINY_EXTRACTOR, **overrides})


def test_short_multitask_learn_logs_per_task_shares(recording_logger):
    logger, writer = recording_logger
    model = tiny_multitask_model()
    model.set_logger(logger)
    model.learn(500, log_interval=1)
    buffer = model.replay_buffer
    stored = buffer.task_ids[: buffer.size()]
    assert set(np.unique(stored)) == {0, 1, 2, 3, 4}  # the buffer's task feature is filled from info["task_id"]
    sample_shares = [writer.values(f"complementary/task_{k}_sample_share") for k in range(5)]
    data_shares = [writer.values(f"complementary/task_{k}_data_share") for k in range(5)]
    assert all(sample_shares) and all(data_shares), sorted(writer.keys())
    for index in range(len(sample_shares[0])):
        assert sum(s[index] for s in sample_shares) == pytest.approx(1.0)
        assert sum(d[index] for d in data_shares) == pytest.approx(1.0)


def test_the_laber_default_logs_no_task_shares(recording_logger):
    """The default re-scores nothing, so it scans no task ids: the same multi-task run logs no shares."""
    logger, writer = recording_logger
    env = make_vec_env(MultiTaskEnv, n_envs=2, seed=0, env_kwargs={"tasks": "cartpole", "schedule": "round_robin"})
    model = ComplementaryDQN("MlpPolicy", env, seed=0, **TINY_DQN)
    model.set_logger(logger)
    model.learn(500, log_interval=1)
    assert set(np.unique(model.replay_buffer.task_ids[: model.replay_buffer.size()])) == {0, 1, 2, 3, 4}
    assert writer.values("complementary/is_weight_mean")  # it trained and logged its draws...
    logged = writer.keys()
    assert not [key for key in logged if "_sample_share" in key or "_data_share" in key]  # ...and no shares


def test_single_task_run_logs_no_task_shares(recording_logger):
    logger, writer = recording_logger
    model = ComplementaryDQN("MlpPolicy", "CartPole-v1", seed=0, **{**TINY_DQN, **DENSITY_RATIO, **TINY_EXTRACTOR})
    model.set_logger(logger)
    model.learn(300, log_interval=1)
    assert writer.values("complementary/ess_fraction")  # refreshed...
    logged = writer.keys()
    assert not [key for key in logged if "_sample_share" in key or "_data_share" in key]  # ...but one task
