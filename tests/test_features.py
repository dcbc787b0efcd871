"""TransitionFeatures: the extractor's input columns mean what they say."""

import numpy as np
import pytest
from gymnasium import spaces

from sb3_complementary.common.features import (
    MAX_OBSERVATION_FEATURES,
    SCALAR_FEATURES,
    TransitionFeatures,
    action_feature_dim,
    observation_feature_dim,
)

COLUMN = {name: i for i, name in enumerate(SCALAR_FEATURES)}


def test_feature_columns_track_age_use_and_staleness():
    features = TransitionFeatures(buffer_size=10, n_envs=2, action_space=spaces.Discrete(3))
    for step in range(5):
        infos = [{}, {"TimeLimit.truncated": step == 4, "task_id": 4}]
        action = np.array([[step % 3], [2]])
        done = np.array([step == 2, step == 4])
        features.add(step, action, np.array([1.0, -2.0]), done, infos, step)
    features.record_use(np.array([0, 0, 3]), np.array([0.5, 0.25, 4.0]), step=4)  # (row 0, env 0) twice, (1, 1)
    matrix = features.matrix(np.arange(10), step=5)
    assert matrix.shape == (10, features.n_columns) == (10, len(SCALAR_FEATURES) + 3)
    rows, envs = np.divmod(np.arange(10), 2)
    np.testing.assert_allclose(matrix[:, COLUMN["log_age"]], np.log1p(5 - rows))
    np.testing.assert_allclose(
        matrix[:, COLUMN["log_sample_count"]], np.log1p([2, 0, 0, 1, 0, 0, 0, 0, 0, 0]), rtol=1e-6
    )
    np.testing.assert_array_equal(matrix[[0, 3], COLUMN["td_abs"]], [0.25, 4.0])  # the last of duplicates
    # Staleness: since the TD measurement when there is one, else since insertion.
    np.testing.assert_allclose(matrix[[0, 3, 4], COLUMN["log_td_staleness"]], np.log1p([1, 1, 3]))
    np.testing.assert_array_equal(matrix[:, COLUMN["reward"]], np.where(envs == 0, 1.0, -2.0))
    np.testing.assert_array_equal(matrix[:, COLUMN["terminal"]], [0, 0, 0, 0, 1, 0, 0, 0, 0, 0])
    np.testing.assert_array_equal(matrix[:, COLUMN["timeout"]], [0, 0, 0, 0, 0, 0, 0, 0, 0, 1])
    np.testing.assert_array_equal(matrix[:, COLUMN["task_id"]], np.where(envs == 1, 4.0, 0.0))
    np.testing.assert_array_equal(matrix[0::2, -3:], np.eye(3)[[0, 1, 2, 0, 1]])
    np.testing.assert_array_equal(matrix[1::2, -3:], np.eye(3)[[2] * 5])
    np.testing.assert_allclose(matrix[0::2, COLUMN["episode_return"]], [3, 3, 3, 1, 2])  # env 0 ended at step 2
    np.testing.assert_allclose(matrix[0::2, COLUMN["log_episode_position"]], np.log1p([0, 1, 2, 0, 1]))


def test_multidiscrete_actions_are_one_hot_per_dimension():
    space = spaces.MultiDiscrete([2, 3])
    features = TransitionFeatures(4, 2, space)
    features.add(0, np.array([[1, 0], [0, 2]]), np.zeros(2), np.zeros(2), [{}, {}], 0)
    np.testing.assert_array_equal(features.action[0], [[0, 1, 1, 0, 0], [1, 0, 0, 0, 1]])


def test_box_and_multibinary_actions_are_raw():
    features = TransitionFeatures(4, 1, spaces.Box(-2, 2, (2,)))
    features.add(0, np.array([[0.5, 3.0]]), np.zeros(1), np.zeros(1), [{}], 0)
    np.testing.assert_array_equal(features.action[0, 0], [0.5, 1.0])  # clipped to [-1, 1]
    binary = TransitionFeatures(4, 1, spaces.MultiBinary(3))
    binary.add(0, np.array([[1, 0, 1]]), np.zeros(1), np.zeros(1), [{}], 0)
    np.testing.assert_array_equal(binary.action[0, 0], [1, 0, 1])


def test_action_feature_dims_and_unsupported_space():
    assert action_feature_dim(spaces.Discrete(5)) == 5
    assert action_feature_dim(spaces.MultiDiscrete([2, 4])) == 6
    assert action_feature_dim(spaces.MultiBinary(3)) == 3
    assert action_feature_dim(spaces.Box(-1, 1, (2, 2))) == 4
    with pytest.raises(ValueError, match="Text"):
        action_feature_dim(spaces.Text(5))


@pytest.mark.parametrize(
    "space",
    [
        spaces.Box(0, 255, (8, 8, 3), np.uint8),
        spaces.Box(-1, 1, (MAX_OBSERVATION_FEATURES + 1,)),
        spaces.Discrete(4),
        spaces.Dict({"a": spaces.Box(-1, 1, (2,))}),
    ],
)
def test_observation_features_reject_unsuitable_spaces_naming_them(space):
    with pytest.raises(ValueError, match=type(space).__name__):
        observation_feature_dim(space)


def test_observation_feature_dim_for_small_flat_box():
    assert observation_feature_dim(spaces.Box(-1, 1, (4,))) == 4
