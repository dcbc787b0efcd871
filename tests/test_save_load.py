"""save/load and save_replay_buffer/load_replay_buffer carry everything; saving is atomic; SB3 buffers are copied."""

import pickle

import gymnasium as gym
import numpy as np
import pytest
import torch as th
from stable_baselines3 import DQN

from sb3_complementary import ComplementaryDQN, ComplementaryReplayBuffer, PrioritizedDQN
from tests.conftest import TINY_DQN, make_model

#: What the buffer stores per transition beside the observations: SB3's arrays and the terminal flag and task id.
STORED_ARRAYS = ("actions", "rewards", "dones", "timeouts", "terminals", "task_ids")


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A density-ratio ComplementaryDQN whose extractor, optimizer and normaliser have moved, saved with its buffer."""
    model = make_model("complementary-density", "CartPole-v1", seed=0)
    model.learn(400)
    folder = tmp_path_factory.mktemp("saved")
    model.save(folder / "model")  # SB3 appends .zip
    model.save_replay_buffer(folder / "buffer")  # and .pkl
    return model, folder


def observations_of(model, n=64):
    buffer = model.replay_buffer
    return buffer.observations[:n, 0]


def test_round_trip_predictions_and_extractor(trained):
    model, folder = trained
    assert (folder / "model.zip").exists()
    loaded = ComplementaryDQN.load(folder / "model.zip", device="cpu")
    obs = observations_of(model)
    np.testing.assert_array_equal(loaded.predict(obs, deterministic=True)[0], model.predict(obs, deterministic=True)[0])
    with th.no_grad():
        th.testing.assert_close(loaded.q_net(th.as_tensor(obs)), model.q_net(th.as_tensor(obs)), rtol=0, atol=0)

    # The extractor: weights and normaliser statistics (its state_dict), logits, and its optimizer state.
    assert model.extractor.normalizer.count.item() > 1  # it did see data
    for key, value in model.extractor.state_dict().items():
        assert th.equal(loaded.extractor.state_dict()[key], value), key
    inputs = model.replay_buffer.ratio_inputs(model.replay_buffer.valid_indices())
    original_logits = model.extractor.numpy_logits(inputs)
    assert np.std(original_logits) > 0  # a fitted classifier
    np.testing.assert_array_equal(loaded.extractor.numpy_logits(inputs), original_logits)
    saved_state = model.extractor.optimizer.state_dict()
    loaded_state = loaded.extractor.optimizer.state_dict()
    assert saved_state["state"], "the extractor optimizer never stepped"
    assert saved_state["param_groups"][0]["lr"] == loaded_state["param_groups"][0]["lr"]
    for index, state in saved_state["state"].items():
        for name, value in state.items():
            assert th.equal(th.as_tensor(loaded_state["state"][index][name]), th.as_tensor(value)), (index, name)

    for knob in ("contribution", "alpha", "uniform_fraction", "candidate_pool", "extractor_kwargs", "extractor_auc"):
        assert getattr(loaded, knob) == getattr(model, knob), knob
    assert loaded.extractor_settings == model.extractor_settings and loaded.extractor_settings["net_arch"] == [16]


def test_replay_buffer_round_trip_keeps_scores_stored_arrays_and_tree(trained):
    model, folder = trained
    loaded = ComplementaryDQN.load(folder / "model.zip", device="cpu")
    loaded.load_replay_buffer(folder / "buffer.pkl")
    original, restored = model.replay_buffer, loaded.replay_buffer
    assert isinstance(restored, ComplementaryReplayBuffer)
    assert restored.pos == original.pos and restored.full == original.full and restored.n_added == original.n_added
    np.testing.assert_array_equal(restored.observations, original.observations)
    np.testing.assert_array_equal(restored.scores, original.scores)
    for name in STORED_ARRAYS:
        np.testing.assert_array_equal(getattr(restored, name), getattr(original, name), name)
    # Same tree, also after any lazily pending scores are applied.
    for buffer in (original, restored):
        buffer.sample_weighted(1)
    np.testing.assert_array_equal(restored.tree.nodes, original.tree.nodes)
    assert restored.tree.total == original.tree.total > 0
    np.testing.assert_array_equal(restored.scores, original.scores)
    np.random.seed(3)
    a = original.sample_weighted(32)
    np.random.seed(3)
    b = restored.sample_weighted(32)
    np.testing.assert_array_equal(a.indices, b.indices)
    np.testing.assert_array_equal(a.raw_weights, b.raw_weights)


def test_learning_resumes_after_loading(trained):
    model, folder = trained
    loaded = ComplementaryDQN.load(folder / "model.zip", env=model.get_env(), device="cpu")
    loaded.load_replay_buffer(folder / "buffer.pkl")
    updates = loaded._n_updates
    head = loaded.extractor.net[-1].weight.detach().clone()
    loaded.learn(300, reset_num_timesteps=False)
    assert loaded.num_timesteps == model.num_timesteps + 300
    assert loaded._n_updates > updates
    assert not th.equal(loaded.extractor.net[-1].weight, head), "the extractor did not train after resuming"
    assert loaded.replay_buffer.n_added == model.replay_buffer.n_added + 300


def test_save_to_and_load_from_a_file_object(trained):
    import io

    model, _ = trained
    file = io.BytesIO()
    model.save(file)
    file.seek(0)
    loaded = ComplementaryDQN.load(file, device="cpu")
    obs = observations_of(model)
    np.testing.assert_array_equal(loaded.predict(obs, deterministic=True)[0], model.predict(obs, deterministic=True)[0])
    buffer_file = io.BytesIO()
    model.save_replay_buffer(buffer_file)
    buffer_file.seek(0)
    loaded.load_replay_buffer(buffer_file)
    np.testing.assert_array_equal(loaded.replay_buffer.scores, model.replay_buffer.scores)


def test_prioritized_round_trip(tmp_path):
    model = make_model("prioritized", "CartPole-v1", seed=1)
    model.learn(300)
    model.save(tmp_path / "per.zip")
    model.save_replay_buffer(tmp_path / "per.pkl")
    loaded = PrioritizedDQN.load(tmp_path / "per.zip", env=model.get_env(), device="cpu")
    loaded.load_replay_buffer(tmp_path / "per.pkl")
    obs = observations_of(model)
    np.testing.assert_array_equal(loaded.predict(obs, deterministic=True)[0], model.predict(obs, deterministic=True)[0])
    np.testing.assert_array_equal(loaded.replay_buffer.tree.nodes, model.replay_buffer.tree.nodes)
    assert loaded.alpha == model.alpha and loaded.beta == model.beta
    loaded.learn(100, reset_num_timesteps=False)
    assert loaded.num_timesteps == 400


# --------------------------------------------------------------------------- plain SB3 buffers, copied

#: The warning of a plain SB3 buffer loaded into a weighted model (not the temporary path, which names the test).
COPY_WARNING = r"has no complementary scores \(\w*ReplayBuffer\); copying it"


@pytest.mark.parametrize("n_envs", [1, 2])
def test_plain_sb3_buffer_is_copied_with_a_warning(tmp_path, n_envs):
    from stable_baselines3.common.env_util import make_vec_env

    env = make_vec_env("CartPole-v1", n_envs=n_envs, seed=0)
    dqn = DQN("MlpPolicy", env, **{**TINY_DQN, "buffer_size": 200}, seed=0)
    dqn.learn(300)  # the ring has wrapped
    dqn.save_replay_buffer(tmp_path / "plain.pkl")
    old = dqn.replay_buffer

    model = make_model("complementary-default", env, buffer_size=200, seed=0)
    with pytest.warns(UserWarning, match=COPY_WARNING):
        model.load_replay_buffer(tmp_path / "plain.pkl")
    new = model.replay_buffer
    assert isinstance(new, ComplementaryReplayBuffer)
    assert new.size() == old.size() and new.n_envs == n_envs
    # The same transitions, oldest first from the new ring's start.
    order = (np.arange(old.buffer_size) + old.pos) % old.buffer_size
    np.testing.assert_array_equal(new.observations[: old.buffer_size], old.observations[order])
    np.testing.assert_array_equal(new.next_observations[: old.buffer_size], old.next_observations[order])
    np.testing.assert_array_equal(new.rewards[: old.buffer_size], old.rewards[order])
    # Every copied row has the initial score, and the tree is built by the first draw that reads it.
    assert new.tree is None
    assert np.all(new.scores[new.valid_indices()] == new._initial_score())
    new.sample_weighted(1)
    assert new.tree.total > 0 and np.all(new.tree.leaves[: new.size() * n_envs] > 0)
    assert np.any(new.terminals)  # CartPole episodes ended inside the window
    model.learn(100, reset_num_timesteps=False)  # and training goes on
    assert model.replay_buffer.n_added >= old.size() + 100 // n_envs


def test_copying_a_memory_optimised_buffer_with_user_replay_kwargs(tmp_path):
    kwargs = {
        **TINY_DQN,
        "buffer_size": 200,
        "optimize_memory_usage": True,
        "replay_buffer_kwargs": {"handle_timeout_termination": False},
    }
    dqn = DQN("MlpPolicy", "CartPole-v1", **kwargs, seed=0)
    dqn.learn(250)
    dqn.save_replay_buffer(tmp_path / "plain.pkl")
    model = make_model("complementary-default", "CartPole-v1", **{**kwargs, "replay_buffer_kwargs": {
        "handle_timeout_termination": False}}, seed=0)  # fmt: skip
    with pytest.warns(UserWarning, match=COPY_WARNING):
        model.load_replay_buffer(tmp_path / "plain.pkl")
    assert model.replay_buffer.optimize_memory_usage
    model.learn(50, reset_num_timesteps=False)


def test_a_weighted_buffer_is_loaded_without_the_copy_warning(tmp_path):
    """The twin of the copy: a buffer that has its scores is loaded as it is, silently."""
    import warnings

    model = make_model("complementary-default", "CartPole-v1", seed=0)
    model.learn(100)
    model.save_replay_buffer(tmp_path / "weighted.pkl")
    other = make_model("complementary-default", "CartPole-v1", seed=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        other.load_replay_buffer(tmp_path / "weighted.pkl")
    np.testing.assert_array_equal(other.replay_buffer.scores, model.replay_buffer.scores)


def test_loading_something_else_than_a_buffer_is_an_error(tmp_path):
    with open(tmp_path / "junk.pkl", "wb") as file:
        pickle.dump({"not": "a buffer"}, file)
    model = make_model("prioritized", "CartPole-v1")
    with pytest.raises(ValueError, match="ReplayBuffer"):
        model.load_replay_buffer(tmp_path / "junk.pkl")


# --------------------------------------------------------------------------- atomic writes


def test_model_save_is_atomic(tmp_path, monkeypatch):
    model = make_model("complementary-default", "CartPole-v1", seed=0)
    target = tmp_path / "model.zip"
    model.save(target)
    before = target.read_bytes()
    model.learn(100)  # the next save would differ

    def fail_midway(obj, file, *args, **kwargs):
        file.write(b"half a tensor")
        raise OSError("disk full")

    monkeypatch.setattr(th, "save", fail_midway)
    with pytest.raises(OSError, match="disk full"):
        model.save(target)
    monkeypatch.undo()
    assert target.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.zip"], "a temporary file was left behind"
    ComplementaryDQN.load(target, device="cpu")  # the old file is still a valid model


def test_save_replay_buffer_is_atomic(tmp_path, monkeypatch):
    model = make_model("prioritized", "CartPole-v1", seed=0)
    model.learn(100)
    target = tmp_path / "buffer.pkl"
    model.save_replay_buffer(target)
    before = target.read_bytes()
    model.learn(100)

    def fail_midway(obj, file, *args, **kwargs):
        file.write(b"\x80\x05 truncated")
        raise OSError("disk full")

    monkeypatch.setattr(pickle, "dump", fail_midway)
    with pytest.raises(OSError, match="disk full"):
        model.save_replay_buffer(target)
    monkeypatch.undo()
    assert target.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["buffer.pkl"]
    model.load_replay_buffer(target)
    assert model.replay_buffer.size() == 100


@pytest.mark.parametrize("algo", ["complementary-default", "prioritized"])
def test_saved_file_names_follow_sb3(tmp_path, algo):
    names = ("agent", "agent_lr0.001", "agent_lr0.002", "agent.zip")
    dqn = DQN("MlpPolicy", "CartPole-v1", **TINY_DQN)
    model = make_model(algo, "CartPole-v1")
    for folder, saver in ((tmp_path / "sb3", dqn), (tmp_path / "ours", model)):
        folder.mkdir()
        for name in names:
            saver.save(folder / name)
        saver.save_replay_buffer(folder / "buffer.v1")
        saver.save_replay_buffer(folder / "buffer")
    expected = sorted(p.name for p in (tmp_path / "sb3").iterdir())
    assert sorted(p.name for p in (tmp_path / "ours").iterdir()) == expected


# --------------------------------------------------------------------------- resuming


@pytest.mark.parametrize("algo", ["complementary-density", "complementary-tree"])
def test_a_resumed_run_keeps_every_piece_of_extractor_state(tmp_path, algo):
    """What docs/design.md ("What a resumed run keeps") promises, checked piece by piece."""
    model = make_model(algo, "CartPole-v1", seed=0)
    model.learn(750)
    model.save(tmp_path / "model")
    model.save_replay_buffer(tmp_path / "buffer")
    loaded = ComplementaryDQN.load(tmp_path / "model", env=gym.make("CartPole-v1"), device="cpu")
    loaded.load_replay_buffer(tmp_path / "buffer.pkl")

    assert np.isfinite(model.extractor_auc) and loaded.extractor_auc == model.extractor_auc
    assert loaded.replay_rng.bit_generator.state == model.replay_rng.bit_generator.state
    assert (loaded.last_fit_step, loaded.last_refresh_step) == (model.last_fit_step, model.last_refresh_step)
    for key, value in model.extractor.state_dict().items():  # weights and the running normaliser
        th.testing.assert_close(loaded.extractor.state_dict()[key], value)
    assert (
        loaded.extractor.optimizer.state_dict()["state"].keys()
        == model.extractor.optimizer.state_dict()["state"].keys()
    )
    np.testing.assert_array_equal(loaded.replay_buffer.scores, model.replay_buffer.scores)

    fits = []
    original = loaded.fit_extractor
    loaded.fit_extractor = lambda *a, **k: fits.append(loaded.num_timesteps) or original(*a, **k)
    loaded.learn(300, reset_num_timesteps=False)
    assert fits and fits[0] - model.last_fit_step >= loaded.extractor_settings["train_freq"]  # it went on, not over
