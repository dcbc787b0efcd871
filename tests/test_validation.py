"""Bad input: every invalid knob raises a ValueError naming the knob, its allowed range and the value given."""

import re

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces
from stable_baselines3 import DQN
from stable_baselines3.common.buffers import DictReplayBuffer, ReplayBuffer

from sb3_complementary import (
    ComplementaryDQN,
    ComplementaryReplayBuffer,
    ComplementarySAC,
    PrioritizedDQN,
    PrioritizedSAC,
)
from tests.conftest import TINY_DQN, TREE_REPLAY, tiny_extractor

UNIT = r"(\[0(\.0)?, ?1(\.0)?\]|between 0(\.0)? and 1(\.0)?|0(\.0)? <= \w+ <= 1(\.0)?)"
NON_NEGATIVE = r"(\[0(\.0)?, ?(inf|∞)[\])]|>= ?0|non-negative)"
POSITIVE = r"(\(0(\.0)?, ?(inf|∞)[\])]|> ?0|positive)"
AT_LEAST_ONE = r"(\[1(\.0)?, ?(inf|∞)[\])]|>= ?1|positive)"
AT_LEAST_TWO = r"(\[2(\.0)?, ?(inf|∞)[\])]|>= ?2)"

RANGE_CASES = [
    ("alpha", -0.5, NON_NEGATIVE),
    ("alpha", float("nan"), NON_NEGATIVE),
    ("uniform_fraction", -0.25, UNIT),
    ("uniform_fraction", 1.01, UNIT),
    ("epsilon", -1e-3, NON_NEGATIVE),
    ("score_floor", -0.5, NON_NEGATIVE),
]
#: PER's IS exponent (the Complementary classes fix theirs by the kind: no beta knob).
BETA_CASES = [("beta", -0.1, UNIT), ("beta", 1.5, UNIT)]

#: Keys of extractor_kwargs, each with a bad value.
EXTRACTOR_CASES = [
    ("lr_ratio", 0.0, POSITIVE),
    ("train_freq", 0, AT_LEAST_ONE),
    ("gradient_steps", 0, AT_LEAST_ONE),
    ("batch_size", 1, AT_LEAST_TWO),
    ("refresh_interval", 0, AT_LEAST_ONE),
    ("temperature", 0.0, POSITIVE),
    ("cap", 0.5, AT_LEAST_ONE),
    ("is_exponent", 1.5, UNIT),
    ("fast_memory", 8, r"\[16, ?500000\]"),  # [16, buffer_size // 2] of DQN's default buffer
]


def assert_names_knob_range_value(error: pytest.ExceptionInfo, knob: str, value, allowed: str) -> None:
    message = str(error.value)
    assert knob in message, message
    assert repr(value) in message or str(value) in message, message
    assert re.search(allowed, message), f"no allowed range in: {message}"


@pytest.mark.parametrize(
    "cls, knob, value, allowed",
    [(cls, *case) for cls in (ComplementaryDQN, PrioritizedDQN) for case in RANGE_CASES]
    + [(PrioritizedDQN, *case) for case in BETA_CASES],
)
def test_algorithm_rejects_out_of_range_replay_knobs(cls, knob, value, allowed):
    with pytest.raises(ValueError) as error:
        cls("MlpPolicy", "CartPole-v1", **{knob: value}, device="cpu")
    assert_names_knob_range_value(error, knob, value, allowed)


@pytest.mark.parametrize("knob, value, allowed", RANGE_CASES + BETA_CASES)
def test_buffer_rejects_out_of_range_knobs(knob, value, allowed):
    with pytest.raises(ValueError) as error:
        ComplementaryReplayBuffer(10, spaces.Box(-1, 1, (2,)), spaces.Discrete(2), device="cpu", **{knob: value})
    assert_names_knob_range_value(error, knob, value, allowed)


@pytest.mark.parametrize("key, value, allowed", EXTRACTOR_CASES)
def test_complementary_rejects_bad_extractor_kwargs(key, value, allowed):
    with pytest.raises(ValueError) as error:
        ComplementaryDQN("MlpPolicy", "CartPole-v1", extractor_kwargs={key: value}, device="cpu")
    assert_names_knob_range_value(error, f"extractor_kwargs[{key!r}]", value, allowed)


def test_unknown_extractor_kwargs_key_names_it_and_the_keys():
    with pytest.raises(ValueError) as error:
        ComplementaryDQN("MlpPolicy", "CartPole-v1", extractor_kwargs={"ratio_cap": 5.0}, device="cpu")
    message = str(error.value)
    assert "extractor_kwargs" in message and "ratio_cap" in message and "'cap'" in message


def test_extractor_kwargs_is_read_never_written():
    given = {"net_arch": (8,), "train_freq": 50}
    model = ComplementaryDQN("MlpPolicy", "CartPole-v1", extractor_kwargs=given, **TINY_DQN)
    assert given == {"net_arch": (8,), "train_freq": 50}
    assert model.extractor_settings["net_arch"] == [8] and model.extractor_settings["refresh_interval"] == 1000


def test_unknown_contribution_names_knob_choices_and_value():
    with pytest.raises(ValueError) as error:
        ComplementaryDQN("MlpPolicy", "CartPole-v1", contribution="gut-feeling", device="cpu")
    message = str(error.value)
    assert "contribution" in message and "gut-feeling" in message
    assert all(name in message for name in ("density_ratio", "fresh_td", "laber"))


@pytest.mark.parametrize("contribution", ["td", "influence", "outcome"])
def test_a_removed_contribution_is_an_unknown_one(contribution):
    """No migration shim: a removed kind gets the error of any unknown one, naming it and the kinds there are."""
    with pytest.raises(ValueError) as error:
        ComplementaryDQN("MlpPolicy", "CartPole-v1", contribution=contribution, device="cpu")
    message = str(error.value)
    assert "contribution must be one of" in message and repr(contribution) in message
    assert all(name in message for name in ("laber", "fresh_td", "density_ratio")), message


def test_per_is_the_prioritized_classes_own_kind():
    """A Complementary class does not take PER's kind (it has no beta); the twin: PrioritizedDQN draws by it."""
    with pytest.raises(ValueError, match=r"contribution must be one of \['laber', 'fresh_td', 'density_ratio'\]"):
        ComplementaryDQN("MlpPolicy", "CartPole-v1", contribution="per", device="cpu")
    assert PrioritizedDQN("MlpPolicy", "CartPole-v1", device="cpu").contribution == "per"


@pytest.mark.parametrize("contribution", ["fresh_td", "laber"])
def test_the_td_kinds_need_a_candidate_pool(contribution):
    with pytest.raises(ValueError, match="candidate_pool >= 1"):
        ComplementaryDQN("MlpPolicy", "CartPole-v1", contribution=contribution, candidate_pool=0, device="cpu")


def test_unknown_initial_score_of_the_buffer_names_knob_choices_and_value():
    with pytest.raises(ValueError) as error:
        ComplementaryReplayBuffer(10, spaces.Box(-1, 1, (2,)), spaces.Discrete(2), device="cpu", initial_score="min")
    message = str(error.value)
    assert "initial_score" in message and "'min'" in message and "max" in message and "neutral" in message


@pytest.mark.parametrize("net_arch", [[], [0], [16, -4]])
def test_bad_extractor_net_arch(net_arch):
    with pytest.raises(ValueError) as error:
        ComplementaryDQN("MlpPolicy", "CartPole-v1", extractor_kwargs={"net_arch": net_arch}, device="cpu")
    message = str(error.value)
    assert "extractor_kwargs['net_arch']" in message and repr(net_arch) in message
    assert "non-empty" in message or "positive" in message


# --------------------------------------------------------------------------- knobs that are gone

#: Constructor knobs of unreleased versions (moved into ``extractor_kwargs``, or whose mechanism is
#: removed): the constructors are explicit, so each one is Python's own unknown-keyword error.
GONE = ["extractor_net_arch", "refresh_interval", "ratio_cap", "coupling_coef", "weighting", "eviction"]


def _env_of(cls) -> str:
    return "CartPole-v1" if cls in (ComplementaryDQN, PrioritizedDQN) else "Pendulum-v1"


@pytest.mark.parametrize("cls", [ComplementaryDQN, PrioritizedDQN, ComplementarySAC, PrioritizedSAC])
@pytest.mark.parametrize("knob", GONE)
def test_a_gone_knob_is_an_unexpected_keyword_naming_itself(cls, knob):
    with pytest.raises(TypeError, match=rf"unexpected keyword argument '{knob}'"):
        cls("MlpPolicy", _env_of(cls), **{knob: 1}, device="cpu")


@pytest.mark.parametrize("cls", [ComplementaryDQN, ComplementarySAC])
def test_a_moved_knob_is_accepted_where_it_lives_now(cls):
    """The twin of the test above: the same setting in ``extractor_kwargs`` is taken, and read."""
    model = cls("MlpPolicy", _env_of(cls), extractor_kwargs={"refresh_interval": 7, "cap": 3.0}, device="cpu")
    assert model.extractor_settings["refresh_interval"] == 7 and model.extractor_settings["cap"] == 3.0


@pytest.mark.parametrize("cls", [PrioritizedDQN, PrioritizedSAC])
def test_relo_is_gone_from_the_prioritized_classes(cls):
    with pytest.raises(TypeError, match="unexpected keyword argument 'priority'"):
        cls("MlpPolicy", _env_of(cls), priority="relo", device="cpu")


@pytest.mark.parametrize("cls", [ComplementaryDQN, ComplementarySAC])
def test_beta_is_gone_from_the_complementary_classes(cls):
    with pytest.raises(TypeError, match="unexpected keyword argument 'beta'"):
        cls("MlpPolicy", _env_of(cls), beta=0.4, device="cpu")


@pytest.mark.parametrize("cls", [PrioritizedDQN, PrioritizedSAC])
def test_beta_stays_on_the_prioritized_classes(cls):
    """The twin of the test above: PER anneals its IS exponent from ``beta``."""
    assert cls("MlpPolicy", _env_of(cls), beta=0.3, device="cpu").beta == 0.3


@pytest.mark.parametrize("cls", [ComplementaryDQN, PrioritizedDQN])
def test_alpha_auto_is_gone(cls):
    with pytest.raises(ValueError) as error:
        cls("MlpPolicy", "CartPole-v1", alpha="auto", device="cpu")
    assert "alpha must be a number >= 0" in str(error.value) and "'auto'" in str(error.value)


def test_the_extractor_training_callback_is_public():
    """The extractor's schedule runs from a public SB3 callback (tests/test_dqn_dropin.py: learn() adds it)."""
    from stable_baselines3.common.callbacks import BaseCallback

    import sb3_complementary

    assert "ExtractorTrainingCallback" in sb3_complementary.__all__
    assert issubclass(sb3_complementary.ExtractorTrainingCallback, BaseCallback)


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
    """An extractor that outputs NaN for some transitions: a warning, uniform weights, and learn() completes."""
    model = ComplementaryDQN(
        "MlpPolicy",
        "CartPole-v1",
        **TINY_DQN,
        **TREE_REPLAY,
        **tiny_extractor(refresh_interval=50, train_freq=50),
        seed=0,
    )
    original = model.extractor.numpy_logits
    calls = []

    def flaky(features):
        logits = original(features)
        logits[::2] = np.nan
        calls.append(len(logits))
        return logits

    monkeypatch.setattr(model.extractor, "numpy_logits", flaky)
    with pytest.warns(RuntimeWarning, match="non-finite"):
        model.learn(300)
    buffer = model.replay_buffer
    assert buffer.tree is not None, "the tree path's draws never built the tree"
    assert np.all(np.isfinite(buffer.tree.nodes)) and np.all(buffer.tree.nodes >= 0)
    assert np.all(np.isfinite(buffer.scores))
    assert model.num_timesteps == 300 and calls, "the buffer was never re-scored with the extractor"
