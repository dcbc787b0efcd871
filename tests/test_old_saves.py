"""Saves of sb3-complementary 0.1.x (tests/data/*_8cac570.zip) are refused with the version and the way out."""

import json
import zipfile
from pathlib import Path

import gymnasium as gym
import pytest

from sb3_complementary import ComplementaryDQN, PrioritizedDQN

DATA = Path(__file__).parent / "data"


@pytest.mark.parametrize(
    ("cls", "name"),
    [(ComplementaryDQN, "complementary_dqn_8cac570.zip"), (PrioritizedDQN, "prioritized_dqn_8cac570.zip")],
)
def test_a_save_of_version_0_1_names_the_version_and_the_way_out(cls: type, name: str) -> None:
    with pytest.raises(ValueError, match=r"0\.1\.x.*export_to_sb3"):
        cls.load(DATA / name, env=gym.make("CartPole-v1"))


def test_a_save_of_this_version_loads(tmp_path: Path) -> None:
    """The twin: the same check lets a current save through."""
    ComplementaryDQN("MlpPolicy", "CartPole-v1", learning_starts=0).save(tmp_path / "model")
    ComplementaryDQN.load(tmp_path / "model", env=gym.make("CartPole-v1")).learn(64)


def test_a_save_of_a_newer_format_asks_for_an_upgrade(tmp_path: Path) -> None:
    ComplementaryDQN("MlpPolicy", "CartPole-v1").save(tmp_path / "model")
    with zipfile.ZipFile(tmp_path / "model.zip") as source, zipfile.ZipFile(tmp_path / "newer.zip", "w") as target:
        for item in source.namelist():
            content = source.read(item)
            if item == "data":
                data = json.loads(content)
                data["replay_format"] += 1
                content = json.dumps(data).encode()
            target.writestr(item, content)
    with pytest.raises(ValueError, match="upgrade"):
        ComplementaryDQN.load(tmp_path / "newer.zip")


@pytest.mark.parametrize("knob", ["refresh_interval", "coupling_coef", "beta"])
def test_a_knob_this_version_does_not_take_is_named(knob: str) -> None:
    with pytest.raises(TypeError, match=knob):
        ComplementaryDQN("MlpPolicy", "CartPole-v1", **{knob: 1})
