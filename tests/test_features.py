"""The extractor's action block: each action space is encoded as it says."""

import numpy as np
import pytest
from gymnasium import spaces

from sb3_complementary.common.extractor import action_feature_dim, encode_actions


def test_discrete_actions_are_one_hot():
    encoded = encode_actions(spaces.Discrete(3), np.array([[0], [1], [2], [0], [2]]))
    assert encoded.dtype == np.float32
    np.testing.assert_array_equal(encoded, np.eye(3)[[0, 1, 2, 0, 2]])


def test_discrete_actions_with_a_start_are_one_hot_from_the_start():
    encoded = encode_actions(spaces.Discrete(3, start=-1), np.array([[-1], [1]]))
    np.testing.assert_array_equal(encoded, np.eye(3)[[0, 2]])


def test_multidiscrete_actions_are_one_hot_per_dimension():
    encoded = encode_actions(spaces.MultiDiscrete([2, 3]), np.array([[1, 0], [0, 2]]))
    np.testing.assert_array_equal(encoded, [[0, 1, 1, 0, 0], [1, 0, 0, 0, 1]])


def test_box_and_multibinary_actions_are_raw():
    box = encode_actions(spaces.Box(-2, 2, (2,)), np.array([[0.5, 3.0]]))
    np.testing.assert_array_equal(box, [[0.5, 1.0]])  # clipped to [-1, 1]
    binary = encode_actions(spaces.MultiBinary(3), np.array([[1, 0, 1]]))
    np.testing.assert_array_equal(binary, [[1, 0, 1]])
    assert box.dtype == binary.dtype == np.float32


@pytest.mark.parametrize(
    "space",
    [spaces.Discrete(5), spaces.MultiDiscrete([2, 4]), spaces.MultiBinary(3), spaces.Box(-1, 1, (2, 2))],
)
def test_the_encoding_is_as_wide_as_action_feature_dim(space):
    actions = np.stack([space.sample() for _ in range(4)]).reshape(4, -1)
    assert encode_actions(space, actions).shape == (4, action_feature_dim(space))


def test_action_feature_dims_and_unsupported_space():
    assert action_feature_dim(spaces.Discrete(5)) == 5
    assert action_feature_dim(spaces.MultiDiscrete([2, 4])) == 6
    assert action_feature_dim(spaces.MultiBinary(3)) == 3
    assert action_feature_dim(spaces.Box(-1, 1, (2, 2))) == 4
    with pytest.raises(ValueError, match="Text"):
        action_feature_dim(spaces.Text(5))
