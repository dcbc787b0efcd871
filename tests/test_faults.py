"""Faults and bad input: killed mid-save, truncated or corrupted files, non-finite data from the env."""

import os
import signal
import subprocess
import sys
import textwrap

import gymnasium as gym
import numpy as np
import pytest

from sb3_complementary import ComplementaryDQN, PrioritizedDQN
from tests.conftest import TINY_DQN

# A child that saves once (the previous file), learns on, and saves again through a writer that stops
# halfway: it writes half of the new file, says "midway <bytes written>" and waits to be killed.
SAVE_THEN_STALL = textwrap.dedent(
    """
    import io, sys
    from sb3_complementary import ComplementaryDQN
    from sb3_complementary.common import weighted_algorithm
    target, what = sys.argv[1], sys.argv[2]
    model = ComplementaryDQN("MlpPolicy", "CartPole-v1", learning_starts=10**6, buffer_size=20000, device="cpu",
                             policy_kwargs={"net_arch": [256, 256]})
    model.learn(3000)
    save = model.save if what == "model" else model.save_replay_buffer
    save(target)
    model.learn(1000, reset_num_timesteps=False)
    atomic_write = weighted_algorithm.atomic_write  # the name save() and save_replay_buffer() call

    def stalling_atomic_write(path, write):
        def half_then_wait(file):
            content = io.BytesIO()
            write(content)
            half = content.getvalue()[: len(content.getvalue()) // 2]
            file.write(half)
            file.flush()
            print("midway", len(half), flush=True)
            sys.stdin.readline()  # the parent never writes: this blocks until the kill

        atomic_write(path, half_then_wait)

    weighted_algorithm.atomic_write = stalling_atomic_write
    save(target)
    """
)


@pytest.mark.parametrize("what", ["model", "buffer"])
def test_a_save_killed_midway_leaves_the_previous_file_loadable(tmp_path, what):
    target = tmp_path / ("model.zip" if what == "model" else "buffer.pkl")
    child = subprocess.Popen(
        [sys.executable, "-c", SAVE_THEN_STALL, str(target), what],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        said = child.stdout.readline().split()
        assert said[:1] == ["midway"], f"the child did not reach the write: {said}"
        # The kill lands inside the write: half of the new file is on disk, in the temporary file only.
        temporaries = [p for p in tmp_path.iterdir() if p.name != target.name]
        assert [p.name.startswith(f".{target.name}.") for p in temporaries] == [True]
        assert temporaries[0].stat().st_size == int(said[1]) > 0
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.kill()
        child.wait(timeout=60)
    assert child.returncode == -signal.SIGKILL
    leftovers = [p.name for p in tmp_path.iterdir() if p.name != target.name]
    model = ComplementaryDQN("MlpPolicy", "CartPole-v1", **TINY_DQN)
    if what == "model":  # the previous file (3000 steps), not the half-written one (4000)
        loaded = ComplementaryDQN.load(target, device="cpu")
        assert loaded.num_timesteps == 3000
    else:
        model.load_replay_buffer(target)
        assert model.replay_buffer.size() == 3000
    assert leftovers == [temporaries[0].name]  # only the orphaned temporary file


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


@pytest.mark.parametrize("cls", [ComplementaryDQN, PrioritizedDQN])
@pytest.mark.parametrize(("what", "message"), [("reward", "Non-finite reward"), ("obs", "Non-finite next_obs")])
def test_non_finite_env_data_is_refused_at_add_and_the_tree_stays_finite(cls, what, message):
    """The LaBER default keeps no tree (its scores stay finite); PER's draws build one, which stays finite."""
    model = cls("MlpPolicy", NaNEnv(what, at=120), **TINY_DQN)
    with pytest.raises(ValueError, match=rf"{message} from the env at transition 119 .*VecCheckNan"):
        model.learn(300)
    buffer = model.replay_buffer
    assert buffer.size() == 119  # nothing of the bad transition was written
    assert model._n_updates > 0, "training had not started before the bad transition"
    assert np.all(np.isfinite(buffer.scores))
    if cls is PrioritizedDQN:
        assert buffer.tree is not None, "PER's draws never built the tree"
        assert np.isfinite(buffer.tree.total) and np.all(np.isfinite(buffer.tree.leaves))
    else:
        assert buffer.tree is None
