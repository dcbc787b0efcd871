"""
Each configuration does only its own work: at the LaBER default no extractor is built or saved, no
sum tree is kept and no |TD| is computed that nothing reads; the extractor's schedule runs from a
public ExtractorTrainingCallback that ``learn()`` adds unless the user passed one.
"""

import zipfile
from pathlib import Path

import pytest
import torch as th
from stable_baselines3.common.callbacks import BaseCallback, CallbackList

from sb3_complementary import ComplementaryDQN, ComplementarySAC, ExtractorTrainingCallback, PrioritizedDQN
from sb3_complementary.dqn.weighted_dqn import WeightedDQN

SMALL = {"learning_starts": 100, "buffer_size": 1000, "batch_size": 16, "train_freq": 4, "seed": 0}
#: A density-ratio extractor that fits (fast memory 100, fitted once 200 transitions are stored) every 100 steps.
RATIO = {
    "contribution": "density_ratio",
    "extractor_kwargs": {"fast_memory": 100, "train_freq": 100, "refresh_interval": 200, "gradient_steps": 4},
}


def saved_members(model: object, tmp_path: Path) -> list[str]:
    model.save(tmp_path / "model")  # type: ignore[attr-defined]
    with zipfile.ZipFile(tmp_path / "model.zip") as archive:
        return archive.namelist()


def count_td(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Count every ``|TD|`` a weighted DQN computes (each call of its ``_td_abs``)."""
    calls = [0]
    original = WeightedDQN._td_abs

    def counted(current: th.Tensor, target: th.Tensor) -> th.Tensor:
        calls[0] += 1
        return original(current, target)

    monkeypatch.setattr(WeightedDQN, "_td_abs", staticmethod(counted))
    return calls


def test_the_laber_default_builds_and_saves_no_extractor(tmp_path: Path) -> None:
    model = ComplementaryDQN("MlpPolicy", "CartPole-v1", **SMALL).learn(400)
    assert model.extractor is None
    assert not any(name.startswith("extractor") for name in saved_members(model, tmp_path))


def test_the_extractor_check_can_fail(tmp_path: Path) -> None:
    """The twin: a configuration that reads the ratio builds the extractor, and the zip holds it."""
    model = ComplementaryDQN("MlpPolicy", "CartPole-v1", **SMALL, **RATIO).learn(400)
    assert model.extractor is not None
    assert "extractor.pth" in saved_members(model, tmp_path)


def test_the_laber_default_keeps_no_sum_tree() -> None:
    model = ComplementaryDQN("MlpPolicy", "CartPole-v1", **SMALL).learn(400)
    assert model._n_updates > 0 and model.replay_buffer.tree is None
    model.replay_diagnostics()  # a query builds nothing either
    model.replay_buffer.ess_fraction()
    assert model.replay_buffer.tree is None


def test_the_tree_check_can_fail() -> None:
    """The twin: PER's draws read the tree, so it has one, with every stored transition's priority."""
    model = PrioritizedDQN("MlpPolicy", "CartPole-v1", **SMALL).learn(400)
    assert model.replay_buffer.tree is not None and model.replay_buffer.tree.total > 0


def test_the_laber_default_computes_one_td_per_gradient_step(monkeypatch: pytest.MonkeyPatch) -> None:
    """The pool's |TD| selects the batch; no second |TD| is computed after the step and thrown away."""
    calls = count_td(monkeypatch)
    model = ComplementaryDQN("MlpPolicy", "CartPole-v1", **SMALL).learn(400)
    assert model._n_updates > 0 and calls[0] == model._n_updates


def test_the_td_count_can_fail(monkeypatch: pytest.MonkeyPatch) -> None:
    """The twin: PER feeds its |TD| back (one per step, no pool); a feedback that also ran for LaBER would double it."""
    calls = count_td(monkeypatch)
    model = PrioritizedDQN("MlpPolicy", "CartPole-v1", **SMALL).learn(400)
    assert calls[0] == model._n_updates

    def feed_back_always(self: WeightedDQN, batch: object, current: th.Tensor, target: th.Tensor) -> None:
        self._td_abs(current.detach(), target)  # what the default did before: computed, then dropped

    calls[0] = 0
    monkeypatch.setattr(WeightedDQN, "_replay_feedback", feed_back_always)
    model = ComplementaryDQN("MlpPolicy", "CartPole-v1", **SMALL).learn(400)
    assert calls[0] == 2 * model._n_updates


def test_uniform_draws_score_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    """``alpha=0`` (the actor-critic default) draws as the parent does: no |TD|, no tree, no extractor."""
    calls = count_td(monkeypatch)
    model = ComplementaryDQN("MlpPolicy", "CartPole-v1", alpha=0.0, **SMALL, **RATIO).learn(400)
    assert calls[0] == 0 and model.replay_buffer.tree is None and model.extractor is None
    sac = ComplementarySAC("MlpPolicy", "Pendulum-v1", learning_starts=50, buffer_size=500, batch_size=8, seed=0)
    sac.learn(80)
    assert sac.extractor is None and sac.replay_buffer.tree is None


class Recorder(BaseCallback):
    """A user's own callback: counts its rollouts."""

    def __init__(self) -> None:
        super().__init__()
        self.rollouts = 0

    def _on_step(self) -> bool:
        return True

    def _on_rollout_end(self) -> None:
        self.rollouts += 1


@pytest.mark.parametrize("wrap", [lambda c: c, lambda c: [c], lambda c: CallbackList([c])], ids=["one", "list", "cl"])
def test_learn_adds_the_extractor_callback_beside_the_users_own(wrap: object) -> None:
    recorder = Recorder()
    model = ComplementaryDQN("MlpPolicy", "CartPole-v1", **SMALL, **RATIO)
    model.learn(500, callback=wrap(recorder))  # type: ignore[operator]
    assert recorder.rollouts > 0  # the user's callback ran
    assert model.last_fit_step == 500 and model.last_refresh_step == 400  # and so did the extractor's schedule
    assert 0.0 <= model.extractor_auc <= 1.0


def test_a_callback_the_user_passes_sets_the_schedule() -> None:
    """The twin: an explicit ExtractorTrainingCallback replaces the default one (never fit; re-score every 100)."""
    model = ComplementaryDQN("MlpPolicy", "CartPole-v1", **SMALL, **RATIO)
    model.learn(500, callback=[Recorder(), ExtractorTrainingCallback(train_freq=10**9, refresh_interval=100)])
    assert model.last_fit_step == 0 and model.last_refresh_step == 500
    assert model.extractor_auc != model.extractor_auc  # NaN: never fitted


def test_the_callback_refuses_a_model_without_an_extractor() -> None:
    model = ComplementaryDQN("MlpPolicy", "CartPole-v1", **SMALL)
    with pytest.raises(ValueError, match="density_ratio"):
        model.learn(200, callback=ExtractorTrainingCallback())
    with pytest.raises(ValueError, match=r"fit_extractor.*contribution='laber'"):
        model.fit_extractor()


@pytest.mark.parametrize(("knob", "value"), [("train_freq", 0), ("refresh_interval", 2.5)])
def test_the_callback_names_a_bad_schedule(knob: str, value: float) -> None:
    with pytest.raises(ValueError, match=knob):
        ExtractorTrainingCallback(**{knob: value})  # type: ignore[arg-type]
