"""Models saved at commit 8cac570 (tests/data/*_8cac570.zip) load, or fail naming what to do."""

from pathlib import Path

import gymnasium as gym
import pytest

from sb3_complementary import ComplementaryDQN, PrioritizedDQN

DATA = Path(__file__).parent / "data"


def test_a_default_model_saved_at_8cac570_loads_and_trains() -> None:
    with pytest.warns(UserWarning, match="extractor_kwargs"):
        model = ComplementaryDQN.load(DATA / "complementary_dqn_8cac570.zip", env=gym.make("CartPole-v1"))
    assert model.extractor_kwargs["net_arch"] == [8]
    assert model.extractor_settings["train_freq"] == 100
    assert not hasattr(model, "label_store") and not hasattr(model, "beta")
    model.learn(100)


def test_a_prioritized_model_saved_at_8cac570_loads() -> None:
    with pytest.warns(UserWarning, match="removed mechanisms"):
        model = PrioritizedDQN.load(DATA / "prioritized_dqn_8cac570.zip", env=gym.make("CartPole-v1"))
    assert model.beta == 0.4
    model.learn(100)


def test_a_model_of_a_removed_signal_names_the_commit() -> None:
    with pytest.raises(ValueError, match="8cac570"):
        ComplementaryDQN.load(DATA / "complementary_dqn_influence_8cac570.zip")


@pytest.mark.parametrize(
    ("knob", "where"),
    [("refresh_interval", "extractor_kwargs"), ("coupling_coef", "8cac570"), ("beta", "is_exponent")],
)
def test_an_old_knob_names_where_it_went(knob: str, where: str) -> None:
    with pytest.raises(ValueError, match=where):
        ComplementaryDQN("MlpPolicy", "CartPole-v1", **{knob: 1})
