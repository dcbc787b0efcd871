"""Faults and bad input: killed mid-save, truncated or corrupted files, non-finite data from the env."""

import os
import signal
import subprocess
import sys
import textwrap
import time

import gymnasium as gym
import numpy as np
import pytest

from sb3_complementary import ComplementaryDQN, PrioritizedDQN
from tests.conftest import TINY_DQN, TINY_EXTRACTOR

# A child that saves in a loop until it is killed; it writes "ready" once the first save is done.
SAVE_LOOP = textwrap.dedent(
    """
    import sys, time
    import torch as th
    from sb3_complementary import ComplementaryDQN
    target, what = sys.argv[1], sys.argv[2]
    model = ComplementaryDQN("MlpPolicy", "CartPole-v1", learning_starts=10**6, buffer_size=20000, device="cpu",
                             policy_kwargs={"net_arch": [256, 256]})
    model.learn(3000)
    save = model.save if what == "model" else model.save_replay_buffer
    save(target)
    print("ready", flush=True)
    while True:
        save(target)
    """
)


@pytest.mark.parametrize("what", ["model", "buffer"])
def test_a_save_killed_midway_leaves_the_previous_file_loadable(tmp_path, what):
    target = tmp_path / ("model.zip" if what == "model" else "buffer.pkl")
    child = subprocess.Popen([sys.executable, "-c", SAVE_LOOP, str(target), what], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "ready"
        time.sleep(0.7)  # several saves in flight: the kill lands inside one of them
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.wait(timeout=60)
    leftovers = [p.name for p in tmp_path.iterdir() if p.name != target.name]
    model = ComplementaryDQN("MlpPolicy", "CartPole-v1", **TINY_DQN)
    if what == "model":
        loaded = ComplementaryDQN.load(target, device="cpu")
        assert loaded.num_timesteps == 3000
    else:
        model.load_replay_buffer(target)
        assert model.replay_buffer.size() == 3000
    assert all(name.startswith(f".{target.name}.") for name in leftovers)  # only an orphaned temporary file


@pytest.fixture
def saved(tmp_path):
    model = PrioritizedDQN("MlpPolicy", "CartPole-v1", seed=0, **TINY_DQN)
    model.learn(100)
    model.save(tmp_path / "model.zip")
    model.save_replay_buffer(tmp_path / "buffer.pkl")
    return model, tmp_path


def test_truncated_or_corrupted_model_files_name_the_file(saved):
    _, folder = saved
    data = (folder / "model.zip").read_bytes()
    (folder / "truncated.zip").write_bytes(data[: len(data) // 2])
    corrupted = bytearray(data)
    corrupted[len(data) // 3 : len(data) // 3 + 64] = bytes(64)
    (folder / "corrupted.zip").write_bytes(bytes(corrupted))
    (folder / "other.zip").write_bytes(b"not a zip at all")
    for name in ("truncated.zip", "corrupted.zip", "other.zip"):
        with pytest.raises(ValueError, match=rf"{folder / name}.*(truncated or corrupted|corrupted)"):
            PrioritizedDQN.load(folder / name, device="cpu")
    with pytest.raises(ValueError, match=r"truncated\.zip is not a readable"):
        PrioritizedDQN.load(folder / "truncated", device="cpu")  # SB3 adds .zip; so does the check


def test_truncated_or_corrupted_buffer_files_name_the_file(saved):
    model, folder = saved
    data = (folder / "buffer.pkl").read_bytes()
    (folder / "truncated.pkl").write_bytes(data[: len(data) // 2])
    (folder / "junk.pkl").write_bytes(b"hello")
    for name in ("truncated.pkl", "junk.pkl"):
        with pytest.raises(ValueError, match=rf"{folder / name}: the file is truncated or corrupted"):
            model.load_replay_buffer(folder / name)
    assert model.replay_buffer.size() == 100  # the model's buffer is untouched


class NaNEnv(gym.Wrapper):
    """CartPole whose reward (or observation) turns NaN at a given step."""

    def __init__(self, what: str, at: int) -> None:
        super().__init__(gym.make("CartPole-v1"))
        self.what, self.at, self.t = what, at, 0

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.t += 1
        if self.t == self.at:
            if self.what == "reward":
                reward = float("nan")
            else:
                obs = np.full_like(obs, np.inf)
        return obs, reward, terminated, truncated, info


@pytest.mark.parametrize(("what", "message"), [("reward", "Non-finite reward"), ("obs", "Non-finite next_obs")])
def test_non_finite_env_data_is_refused_at_add_and_the_tree_stays_finite(what, message):
    model = ComplementaryDQN("MlpPolicy", NaNEnv(what, at=120), **TINY_DQN, **TINY_EXTRACTOR)
    with pytest.raises(ValueError, match=rf"{message} from the env at transition 119 .*VecCheckNan"):
        model.learn(300)
    buffer = model.replay_buffer
    assert buffer.size() == 119  # nothing of the bad transition was written
    assert np.isfinite(buffer.tree.total) and np.all(np.isfinite(buffer.tree.leaves))
