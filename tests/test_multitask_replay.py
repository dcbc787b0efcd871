"""Task-aware replay: the task-id feature, per-task shares in the log, labels balanced within each task."""

import numpy as np
import pytest
from stable_baselines3.common.env_util import make_vec_env

from sb3_complementary import ComplementaryDQN, ComplementarySAC, MultiTaskEnv
from sb3_complementary.common.features import SCALAR_FEATURES
from sb3_complementary.common.label_store import LabelStore
from sb3_complementary.common.tasks import TASK_FEATURE_COLUMN, rank_within_tasks, task_shares
from tests.conftest import TINY_DQN, TINY_EXTRACTOR


def test_rank_within_tasks_on_hand_made_labels():
    labels = np.array([1, 1, 1, 0, 0, 0, 0, 1, 0.5], dtype=np.float32)
    tasks = np.array([0, 0, 0, 0, 1, 1, 1, 1, 2])
    out = rank_within_tasks(labels, tasks)
    # Task 0 (3 of 4 positive): the negative ranks 0, the positives share mid-rank 2 of 3 -> 2/3.
    # Task 1 (1 of 4 positive): the negatives share mid-rank 1 -> 1/3, the positive ranks 3/3.
    # Task 2 (one label): 0.5.
    expected = [2 / 3, 2 / 3, 2 / 3, 0, 1 / 3, 1 / 3, 1 / 3, 1, 0.5]
    np.testing.assert_allclose(out, expected, rtol=1e-6)
    for task in (0, 1, 2):
        assert out[tasks == task].mean() == pytest.approx(0.5)  # no task is favoured on average
    graded = rank_within_tasks(np.array([0.9, 0.1, 0.5, 0.3]), np.array([7, 7, 7, 7]))
    np.testing.assert_allclose(graded, [1, 0, 2 / 3, 1 / 3])  # order kept within a task
    assert out.dtype == np.float32


def test_task_shares():
    shares = task_shares(np.array([0, 0, 0, 1]), np.array([0.1, 0.1, 0.1, 0.7]))
    assert shares.keys() == {0, 1}
    assert shares[0] == pytest.approx((0.3, 0.75)) and shares[1] == pytest.approx((0.7, 0.25))
    assert task_shares(np.array([]), np.array([])) == {}


def test_label_store_balances_targets_per_task_and_keeps_raw_labels():
    assert SCALAR_FEATURES[TASK_FEATURE_COLUMN] == "task_id"
    features = np.zeros((8, 12), dtype=np.float32)
    features[4:, TASK_FEATURE_COLUMN] = 1  # task 0: rows 0-3, task 1: rows 4-7
    labels = np.array([1, 1, 1, 0, 0, 0, 0, 1], dtype=np.float32)
    balanced = LabelStore(16, 12, task_column=TASK_FEATURE_COLUMN)
    balanced.add(features, labels)
    np.testing.assert_allclose(balanced.targets(), [2 / 3, 2 / 3, 2 / 3, 0, 1 / 3, 1 / 3, 1 / 3, 1], rtol=1e-6)
    assert balanced.positive_share() == 0.5  # the stored labels stay raw
    _, targets = balanced.sample(64, np.random.default_rng(0))
    assert np.all(np.min(np.abs(targets[:, None] - np.array([0, 1 / 3, 2 / 3, 1])), axis=1) < 1e-6)
    balanced.add(features[:1], np.array([0], dtype=np.float32))  # new labels: ranks recomputed
    assert len(balanced.targets()) == 9 and balanced.targets()[0] == pytest.approx(0.75)
    plain = LabelStore(16, 12)
    plain.add(features, labels)
    np.testing.assert_array_equal(plain.targets(), labels)
    # Without the option, the same draws and targets as before it existed.
    np.testing.assert_array_equal(
        plain.sample(5, np.random.default_rng(1))[1], labels[np.random.default_rng(1).integers(0, 8, size=5)]
    )


def tiny_multitask_model(**overrides):
    env = make_vec_env(MultiTaskEnv, n_envs=2, seed=0, env_kwargs={"tasks": "cartpole", "schedule": "round_robin"})
    return ComplementaryDQN("MlpPolicy", env, seed=0, **{**TINY_DQN, **TINY_EXTRACTOR, **overrides})


@pytest.mark.parametrize("task_balanced_labels", [False, True])
def test_short_multitask_learn_logs_per_task_shares(recording_logger, task_balanced_labels):
    logger, writer = recording_logger
    model = tiny_multitask_model(task_balanced_labels=task_balanced_labels)
    model.set_logger(logger)
    model.learn(500, log_interval=1)
    buffer = model.replay_buffer
    stored = buffer.features.task_id[: buffer.size()]
    assert set(np.unique(stored)) == {0, 1, 2, 3, 4}  # the buffer's task feature is filled from info["task_id"]
    assert (model.label_store.task_column is not None) == task_balanced_labels
    sample_shares = [writer.values(f"complementary/task_{k}_sample_share") for k in range(5)]
    data_shares = [writer.values(f"complementary/task_{k}_data_share") for k in range(5)]
    assert all(sample_shares) and all(data_shares), sorted(writer.keys())
    for index in range(len(sample_shares[0])):
        assert sum(s[index] for s in sample_shares) == pytest.approx(1.0)
        assert sum(d[index] for d in data_shares) == pytest.approx(1.0)
    if task_balanced_labels:
        targets = model.label_store.targets()
        tasks = model.label_store.features[: len(model.label_store), TASK_FEATURE_COLUMN]
        for task in np.unique(tasks):
            assert targets[tasks == task].mean() == pytest.approx(0.5, abs=1e-5)


def test_single_task_run_logs_no_task_shares(recording_logger):
    logger, writer = recording_logger
    model = ComplementaryDQN("MlpPolicy", "CartPole-v1", seed=0, **{**TINY_DQN, **TINY_EXTRACTOR})
    model.set_logger(logger)
    model.learn(300, log_interval=1)
    assert writer.values("complementary/ess_fraction")  # refreshed...
    logged = writer.keys()
    assert not [key for key in logged if "_sample_share" in key or "_data_share" in key]  # ...but one task


def test_task_balanced_labels_is_validated_and_saved(tmp_path):
    with pytest.raises(ValueError, match="task_balanced_labels must be a bool"):
        tiny_multitask_model(task_balanced_labels="yes")
    model = tiny_multitask_model(task_balanced_labels=True)
    model.save(tmp_path / "model.zip")
    loaded = ComplementaryDQN.load(tmp_path / "model.zip")
    assert loaded.task_balanced_labels is True and loaded.label_store.task_column == TASK_FEATURE_COLUMN
    default = ComplementaryDQN("MlpPolicy", "CartPole-v1", **TINY_DQN)
    assert default.task_balanced_labels is False and default.label_store.task_column is None
    # A knob of the Complementary mixin: every Complementary algorithm has it.
    sac = ComplementarySAC("MlpPolicy", "Pendulum-v1", buffer_size=100, task_balanced_labels=True, device="cpu")
    assert sac.label_store.task_column == TASK_FEATURE_COLUMN
