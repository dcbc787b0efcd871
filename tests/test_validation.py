"""Bad input: every invalid knob raises a ValueError naming the knob, its allowed range and the value given."""

import re

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces
from stable_baselines3 import DQN
from stable_baselines3.common.buffers import DictReplayBuffer, ReplayBuffer

from sb3_complementary import ComplementaryDQN, ComplementaryReplayBuffer, PrioritizedDQN
from tests.conftest import LABEL_REPLAY, TINY_DQN

UNIT = r"(\[0(\.0)?, ?1(\.0)?\]|between 0(\.0)? and 1(\.0)?|0(\.0)? <= \w+ <= 1(\.0)?)"
NON_NEGATIVE = r"(\[0(\.0)?, ?(inf|∞)[\])]|>= ?0|non-negative)"
POSITIVE = r"(\(0(\.0)?, ?(inf|∞)[\])]|> ?0|positive)"
AT_LEAST_ONE = r"(\[1(\.0)?, ?(inf|∞)[\])]|>= ?1|positive)"

RANGE_CASES = [
    ("alpha", -0.5, NON_NEGATIVE),
    ("alpha", float("nan"), NON_NEGATIVE),
    ("beta", -0.1, UNIT),
    ("beta", 1.5, UNIT),
    ("uniform_fraction", -0.25, UNIT),
    ("uniform_fraction", 1.01, UNIT),
    ("epsilon", -1e-3, NON_NEGATIVE),
    ("score_floor", -0.5, NON_NEGATIVE),
]

EXTRACTOR_CASES = [
    ("extractor_lr_ratio", 0.0, POSITIVE),
    ("extractor_train_freq", 0, AT_LEAST_ONE),
    ("extractor_gradient_steps", 0, AT_LEAST_ONE),
    ("extractor_batch_size", 0, AT_LEAST_ONE),
    ("refresh_interval", 0, AT_LEAST_ONE),
    ("coupling_coef", -0.1, NON_NEGATIVE),
    ("probe_size", 0, AT_LEAST_ONE),
    ("label_capacity", 0, AT_LEAST_ONE),
]


def assert_names_knob_range_value(error: pytest.ExceptionInfo, knob: str, value, allowed: str) -> None:
    message = str(error.value)
    assert knob in message, message
    assert repr(value) in message or str(value) in message, message
    assert re.search(allowed, message), f"no allowed range in: {message}"


@pytest.mark.parametrize("cls", [ComplementaryDQN, PrioritizedDQN])
@pytest.mark.parametrize("knob, value, allowed", RANGE_CASES)
def test_algorithm_rejects_out_of_range_replay_knobs(cls, knob, value, allowed):
    with pytest.raises(ValueError) as error:
        cls("MlpPolicy", "CartPole-v1", **{knob: value}, device="cpu")
    assert_names_knob_range_value(error, knob, value, allowed)


@pytest.mark.parametrize("knob, value, allowed", RANGE_CASES)
def test_buffer_rejects_out_of_range_knobs(knob, value, allowed):
    with pytest.raises(ValueError) as error:
        ComplementaryReplayBuffer(10, spaces.Box(-1, 1, (2,)), spaces.Discrete(2), device="cpu", **{knob: value})
    assert_names_knob_range_value(error, knob, value, allowed)


@pytest.mark.parametrize("knob, value, allowed", EXTRACTOR_CASES)
def test_complementary_rejects_bad_extractor_knobs(knob, value, allowed):
    with pytest.raises(ValueError) as error:
        ComplementaryDQN("MlpPolicy", "CartPole-v1", **{knob: value}, device="cpu")
    assert_names_knob_range_value(error, knob, value, allowed)


def test_unknown_contribution_names_knob_choices_and_value():
    with pytest.raises(ValueError) as error:
        ComplementaryDQN("MlpPolicy", "CartPole-v1", contribution="gut-feeling", device="cpu")
    message = str(error.value)
    assert "contribution" in message and "gut-feeling" in message
    assert all(name in message for name in ("influence", "outcome", "td"))


def test_unknown_initial_score_names_knob_choices_and_value():
    with pytest.raises(ValueError) as error:
        PrioritizedDQN("MlpPolicy", "CartPole-v1", initial_score="min", device="cpu")
    message = str(error.value)
    assert "initial_score" in message and "'min'" in message and "max" in message and "neutral" in message


@pytest.mark.parametrize("net_arch", [[], [0], [16, -4]])
def test_bad_extractor_net_arch(net_arch):
    with pytest.raises(ValueError) as error:
        ComplementaryDQN("MlpPolicy", "CartPole-v1", extractor_net_arch=net_arch, device="cpu")
    message = str(error.value)
    assert "extractor_net_arch" in message and repr(net_arch) in message
    assert "non-empty" in message or "positive" in message


def test_non_numeric_knob():
    with pytest.raises(ValueError) as error:
        PrioritizedDQN("MlpPolicy", "CartPole-v1", alpha="high", device="cpu")
    assert "alpha" in str(error.value) and "'high'" in str(error.value)


def test_epsilon_and_floor_both_zero_is_rejected_unless_uniform():
    box, discrete = spaces.Box(-1, 1, (2,)), spaces.Discrete(2)
    with pytest.raises(ValueError, match="epsilon"):
        ComplementaryReplayBuffer(10, box, discrete, device="cpu", epsilon=0.0, score_floor=0.0)
    ComplementaryReplayBuffer(10, box, discrete, device="cpu", epsilon=0.0, score_floor=0.0, uniform_fraction=1.0)


def test_n_steps_below_one_is_rejected():
    with pytest.raises(ValueError, match="n_steps"):
        ComplementaryReplayBuffer(10, spaces.Box(-1, 1, (2,)), spaces.Discrete(2), device="cpu", n_steps=0)


@pytest.mark.parametrize("cls", [ComplementaryDQN, PrioritizedDQN])
def test_unsupported_action_space_names_the_space(cls):
    env = gym.make("Pendulum-v1")  # Box actions: DQN does not support them
    with pytest.raises((ValueError, AssertionError), match="Box"):
        cls("MlpPolicy", env, device="cpu")


@pytest.mark.parametrize("buffer_class", [ReplayBuffer, DictReplayBuffer])
@pytest.mark.parametrize("cls", [ComplementaryDQN, PrioritizedDQN])
def test_plain_sb3_replay_buffer_class_is_rejected(cls, buffer_class):
    with pytest.raises(ValueError) as error:
        cls("MlpPolicy", "CartPole-v1", replay_buffer_class=buffer_class, device="cpu")
    message = str(error.value)
    assert "ComplementaryReplayBuffer" in message and buffer_class.__name__ in message


def test_subclass_of_complementary_buffer_is_accepted():
    class MyBuffer(ComplementaryReplayBuffer):
        pass

    model = PrioritizedDQN("MlpPolicy", "CartPole-v1", replay_buffer_class=MyBuffer, **TINY_DQN)
    assert isinstance(model.replay_buffer, MyBuffer)
    assert model.replay_buffer.alpha == model.alpha


def test_user_replay_buffer_kwargs_are_not_mutated():
    replay_kwargs = {"handle_timeout_termination": True}
    PrioritizedDQN("MlpPolicy", "CartPole-v1", replay_buffer_kwargs=replay_kwargs, **TINY_DQN)
    assert replay_kwargs == {"handle_timeout_termination": True}
    DQN("MlpPolicy", "CartPole-v1", replay_buffer_kwargs=replay_kwargs, **TINY_DQN)  # rl-zoo style reuse


def test_non_finite_scores_during_training_fall_back_and_training_goes_on(monkeypatch):
    """An extractor that outputs NaN for some transitions: a warning, floor scores, and learn() completes."""
    model = ComplementaryDQN(
        "MlpPolicy",
        "CartPole-v1",
        **TINY_DQN,
        **LABEL_REPLAY,
        contribution="td",
        refresh_interval=50,
        extractor_train_freq=50,
        seed=0,
    )
    original = model.extractor.score

    def flaky(features):
        scores = original(features)
        scores[::2] = np.nan
        return scores

    monkeypatch.setattr(model.extractor, "score", flaky)
    with pytest.warns(RuntimeWarning, match="non-finite"):
        model.learn(300)
    buffer = model.replay_buffer
    assert np.all(np.isfinite(buffer.tree.nodes)) and np.all(buffer.tree.nodes >= 0)
    assert np.all(np.isfinite(buffer.scores))
    assert model.num_timesteps == 300
