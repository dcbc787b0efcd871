"""Contracts an SB3 user relies on without reading our docs: file modes, TensorBoard run names, seeding, sample()."""

import inspect
import os
import stat
import warnings

import gymnasium as gym
import numpy as np
import pytest
from stable_baselines3 import DQN
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.buffers import DictReplayBuffer, NStepReplayBuffer, ReplayBuffer
from stable_baselines3.common.envs import BitFlippingEnv
from stable_baselines3.common.vec_env import DummyVecEnv
from stable_baselines3.her import HerReplayBuffer

import sb3_complementary
from sb3_complementary import (
    ComplementaryDictReplayBuffer,
    ComplementaryDQN,
    ComplementaryHerReplayBuffer,
    ComplementaryReplayBuffer,
    ComplementarySAC,
    PrioritizedDQN,
)
from sb3_complementary.common.weighted_algorithm import WeightedAlgorithm
from tests.conftest import TINY_DQN, TINY_EXTRACTOR, fill_buffer

#: Every public algorithm class of the package.
ALGORITHM_CLASSES = [
    getattr(sb3_complementary, name)
    for name in sb3_complementary.__all__
    if isinstance(getattr(sb3_complementary, name), type)
    and issubclass(getattr(sb3_complementary, name), WeightedAlgorithm)
]
#: The keyword-only knobs each kind of class adds to its parent's parameters.
COMPLEMENTARY_KNOBS = {
    "contribution",
    "alpha",
    "epsilon",
    "uniform_fraction",
    "score_floor",
    "candidate_pool",
    "extractor_kwargs",
}
PRIORITIZED_KNOBS = {"alpha", "beta", "epsilon", "uniform_fraction", "score_floor"}
#: Parents whose classes choose the actor's batch (the actor-critics).
VALUE_BASED_PARENTS = {"DQN", "QRDQN"}


@pytest.fixture
def umask():
    """Set the process umask for one test, and put the old one back."""
    old = os.umask(0o022)
    os.umask(old)

    def set_to(value: int) -> None:
        os.umask(value)

    yield set_to
    os.umask(old)


@pytest.mark.parametrize("mask", [0o022, 0o077])
def test_saved_files_honour_the_umask_as_sb3s_do(tmp_path, umask, mask):
    umask(mask)
    model = ComplementaryDQN("MlpPolicy", "CartPole-v1", **TINY_DQN, **TINY_EXTRACTOR)
    model.learn(100)
    model.save(tmp_path / "ours")
    model.save_replay_buffer(tmp_path / "ours_buffer")
    reference = DQN("MlpPolicy", "CartPole-v1", **TINY_DQN)
    reference.save(tmp_path / "sb3")
    expected = stat.S_IMODE((tmp_path / "sb3.zip").stat().st_mode)
    assert expected == 0o666 & ~mask
    assert stat.S_IMODE((tmp_path / "ours.zip").stat().st_mode) == expected
    assert stat.S_IMODE((tmp_path / "ours_buffer.pkl").stat().st_mode) == expected


@pytest.fixture
def tb_log_names(monkeypatch):
    """The ``tb_log_name`` every ``learn()`` hands to SB3's logger set-up (no TensorBoard needed)."""
    names: list[str] = []
    original = BaseAlgorithm._setup_learn

    def spy(self, total_timesteps, callback=None, reset_num_timesteps=True, tb_log_name="run", progress_bar=False):
        names.append(tb_log_name)
        return original(self, total_timesteps, callback, reset_num_timesteps, tb_log_name, progress_bar)

    monkeypatch.setattr(BaseAlgorithm, "_setup_learn", spy)
    return names


@pytest.mark.parametrize("cls", [ComplementaryDQN, PrioritizedDQN])
def test_tensorboard_runs_are_named_after_the_class(tb_log_names, cls):
    model = cls("MlpPolicy", "CartPole-v1", **TINY_DQN)
    model.learn(60)
    model.learn(60, tb_log_name="mine")
    assert tb_log_names == [cls.__name__, "mine"]


def test_buffer_sample_is_sb3s_uniform_sample_whatever_the_scores():
    space = gym.spaces.Box(-np.inf, np.inf, shape=(3,), dtype=np.float32)
    ours = ComplementaryDQN("MlpPolicy", gym.make("CartPole-v1"), **TINY_DQN).replay_buffer
    ours = type(ours)(64, space, gym.spaces.Discrete(2), device="cpu", n_envs=2)
    plain = ReplayBuffer(64, space, gym.spaces.Discrete(2), device="cpu", n_envs=2)
    fill_buffer(ours, 20)
    fill_buffer(plain, 20)
    scores = np.zeros(ours.buffer_size * ours.n_envs)
    scores[:4] = 1e6  # a sampler that followed the scores would return these four only
    ours.update_scores(np.arange(len(scores)), scores)
    np.random.seed(5)
    got = ours.sample(16)
    np.random.seed(5)
    expected = plain.sample(16)
    for name in ("observations", "actions", "next_observations", "dones", "rewards"):
        np.testing.assert_array_equal(getattr(got, name).numpy(), getattr(expected, name).numpy())


def test_actor_critic_tensorboard_name_too(tb_log_names):
    model = ComplementarySAC("MlpPolicy", "Pendulum-v1", learning_starts=10, buffer_size=200, device="cpu")
    model.learn(20)
    assert tb_log_names == ["ComplementarySAC"]


def test_every_public_algorithm_class_is_listed():
    """The check below runs over something: every Complementary and Prioritized class of ``__all__``."""
    names = {cls.__name__ for cls in ALGORITHM_CLASSES}
    assert len(names) == 11 and {"ComplementaryDQN", "PrioritizedSAC", "ComplementaryCrossQ"} <= names


@pytest.mark.parametrize("cls", ALGORITHM_CLASSES, ids=lambda c: c.__name__)
def test_constructor_signature_shows_the_parent_parameters_then_the_knobs(cls):
    """An explicit constructor: the parent's parameters in its order with its defaults, then the keyword-only knobs."""
    parent = next(c for c in cls.__mro__ if c.__module__.startswith(("stable_baselines3", "sb3_contrib")))
    assert "__signature__" not in cls.__dict__, "a synthesised signature"
    shown = inspect.signature(cls.__init__).parameters
    inherited = inspect.signature(parent.__init__).parameters
    assert list(shown)[: len(inherited)] == list(inherited)
    for name, parameter in inherited.items():
        assert shown[name].default == parameter.default, (
            f"{name}: {shown[name].default!r} != SB3's {parameter.default!r}"
        )
    knobs = set(list(shown)[len(inherited) :])
    expected = COMPLEMENTARY_KNOBS if cls.__name__.startswith("Complementary") else PRIORITIZED_KNOBS
    expected = expected | ({"actor_batch"} if parent.__name__ not in VALUE_BASED_PARENTS else set())
    assert knobs == expected
    assert all(shown[k].kind is inspect.Parameter.KEYWORD_ONLY for k in knobs)
    assert not [p for p in shown.values() if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    inspect.signature(cls).bind("MlpPolicy", "CartPole-v1", learning_starts=10, alpha=0.5)  # as a user calls it


# ------------------------------------------------------------------ one source of truth for the replay knobs
def test_load_time_overrides_reach_the_buffer(tmp_path):
    model = PrioritizedDQN("MlpPolicy", "CartPole-v1", seed=0, **TINY_DQN)
    model.learn(200)
    model.save(tmp_path / "per")
    model.save_replay_buffer(tmp_path / "per_buffer")
    loaded = PrioritizedDQN.load(tmp_path / "per", env=gym.make("CartPole-v1"), alpha=0.1, uniform_fraction=0.5)
    assert (loaded.alpha, loaded.replay_buffer.alpha) == (0.1, 0.1)
    assert (loaded.uniform_fraction, loaded.replay_buffer.uniform_fraction) == (0.5, 0.5)
    loaded.load_replay_buffer(tmp_path / "per_buffer.pkl")  # pickled at alpha 0.6: the model's 0.1 wins
    buffer = loaded.replay_buffer
    assert (buffer.alpha, buffer.uniform_fraction) == (0.1, 0.5)
    indices = buffer.valid_indices()
    np.testing.assert_allclose(buffer.tree.leaves[indices], buffer.priority(buffer.scores[indices]), rtol=1e-6)


@pytest.mark.parametrize(
    "cls, knob", [(PrioritizedDQN, "alpha"), (ComplementaryDQN, "alpha"), (ComplementaryDQN, "beta")]
)
@pytest.mark.parametrize("value", [0.3, 0.6])
def test_a_replay_knob_in_replay_buffer_kwargs_is_refused_naming_it(cls, knob, value):
    """Each replay knob has one place, the constructor: replay_buffer_kwargs may not set it, even to the same value."""
    refusal = rf"replay_buffer_kwargs sets \['{knob}'\]: {cls.__name__} sets these on its buffer itself"
    with pytest.raises(ValueError, match=refusal):
        cls("MlpPolicy", "CartPole-v1", replay_buffer_kwargs={knob: value}, **TINY_DQN)
    model = cls("MlpPolicy", "CartPole-v1", replay_buffer_kwargs={"handle_timeout_termination": False}, **TINY_DQN)
    assert model.replay_buffer.handle_timeout_termination is False  # SB3's own buffer kwargs still pass through


# ------------------------------------------------------------------ n-step and the Dict buffer
@pytest.mark.parametrize("cls", [ComplementaryDQN, PrioritizedDQN, ComplementarySAC])
def test_n_step_replay_is_an_sb3_nstep_buffer_and_sb3_does_not_warn(cls):
    env = "Pendulum-v1" if cls is ComplementarySAC else "CartPole-v1"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = cls("MlpPolicy", env, n_steps=3, learning_starts=10, buffer_size=200, device="cpu")
    assert isinstance(model.replay_buffer, NStepReplayBuffer)
    assert isinstance(model.replay_buffer, ComplementaryReplayBuffer)
    assert (model.replay_buffer.n_steps, model.replay_buffer.gamma) == (3, model.gamma)
    assert not [w for w in caught if "n_steps" in str(w.message)]
    model.learn(40)


def _positional(cls: type) -> list[str]:
    return [n for n, p in inspect.signature(cls.__init__).parameters.items() if p.kind is p.POSITIONAL_OR_KEYWORD]


@pytest.mark.parametrize(
    ("ours", "sb3"),
    [(ComplementaryReplayBuffer, ReplayBuffer), (ComplementaryDictReplayBuffer, DictReplayBuffer),
     (ComplementaryHerReplayBuffer, HerReplayBuffer)],
    ids=lambda c: c.__name__,
)  # fmt: skip
def test_buffers_take_sb3s_parameters_in_sb3s_order(ours, sb3):
    """Explicit constructors (no synthesised signature) that start with SB3's own parameters, in its order."""
    assert "__signature__" not in ours.__dict__
    theirs = _positional(sb3)
    assert _positional(ours)[: len(theirs)] == theirs


def test_dict_buffer_takes_sb3s_positional_parameters():
    space = gym.spaces.Dict({"a": gym.spaces.Box(-1, 1, (2,)), "b": gym.spaces.Box(-1, 1, (3,))})
    buffer = ComplementaryDictReplayBuffer(32, space, gym.spaces.Discrete(2), "cpu", 2, False, False, alpha=0.5)
    assert (buffer.n_envs, buffer.handle_timeout_termination, buffer.alpha) == (2, False, 0.5)


def test_the_her_buffer_takes_its_knobs_and_n_steps_1_only():
    env = DummyVecEnv([lambda: BitFlippingEnv(n_bits=4, continuous=False, max_steps=4)])
    space, actions = env.observation_space, env.action_space
    knobs = {"alpha": 0.5, "beta": 0.7, "epsilon": 1e-4, "uniform_fraction": 0.25, "score_floor": 0.01}
    buffer = ComplementaryHerReplayBuffer(64, space, actions, env, device="cpu", n_steps=1, **knobs)
    assert {k: getattr(buffer, k) for k in knobs} == knobs
    assert buffer.n_steps == 1
    with pytest.raises(ValueError, match="n_steps=3"):
        ComplementaryHerReplayBuffer(64, space, actions, env, device="cpu", n_steps=3)
