"""The learned selection strength: Exp3.S over strengths, credited by the return change after each window."""

from typing import TYPE_CHECKING

import numpy as np
import pytest

from sb3_complementary.common.selection_strength import SelectionStrengthBandit, WindowedReturnCredit

if TYPE_CHECKING:
    from sb3_complementary import ComplementaryDQN


def _play(bandit: SelectionStrengthBandit, best: int, rounds: int, rng: np.random.Generator) -> np.ndarray:
    """Reward the chosen arm +1 (noisy) if it is ``best``, -1 otherwise; the probabilities after."""
    for _ in range(rounds):
        arm = bandit.choose(rng)
        bandit.update(arm, (1.0 if arm == best else -1.0) + 0.3 * rng.standard_normal())
    return bandit.probabilities()


def test_probabilities_are_a_distribution_with_an_exploration_floor() -> None:
    bandit = SelectionStrengthBandit(exploration=0.1)
    bandit.log_weights = np.array([50.0, 0.0, -50.0])
    p = bandit.probabilities()
    assert p.sum() == pytest.approx(1.0)
    assert p.min() >= 0.1 / 3 - 1e-12
    np.testing.assert_allclose(SelectionStrengthBandit().probabilities(), 1 / 3)


@pytest.mark.parametrize("best", [0, 2])
def test_it_learns_the_best_strength_uniform_included(best: int) -> None:
    # Uniform (strength 0) must be reachable: where selection harms, the bandit backs off to it.
    p = _play(SelectionStrengthBandit(), best, 150, np.random.default_rng(0))
    assert p.argmax() == best
    assert p[best] > 0.6


def test_it_follows_a_best_strength_that_changes() -> None:
    rng = np.random.default_rng(1)
    bandit = SelectionStrengthBandit()
    assert _play(bandit, 2, 150, rng).argmax() == 2
    assert _play(bandit, 0, 150, rng).argmax() == 0


def test_without_sharing_it_is_slower_to_follow_a_change() -> None:
    # The test above can fail: with no sharing and no exploration floor to speak of, the
    # weights of the first best arm pin it, and the same 150 rounds do not move it.
    rng = np.random.default_rng(1)
    bandit = SelectionStrengthBandit(share=0.0, exploration=0.01, step_size=2.0)
    _play(bandit, 2, 150, rng)
    assert _play(bandit, 0, 30, rng).argmax() == 2


def test_rewards_are_scaled_by_their_history_so_the_return_scale_does_not_matter() -> None:
    a, b = SelectionStrengthBandit(), SelectionStrengthBandit()
    rng_a, rng_b = np.random.default_rng(3), np.random.default_rng(3)
    for _ in range(60):
        arm_a, arm_b = a.choose(rng_a), b.choose(rng_b)
        assert arm_a == arm_b
        reward = float(arm_a == 1) + 0.1 * rng_a.standard_normal()
        rng_b.standard_normal()
        a.update(arm_a, reward)
        b.update(arm_b, 1000.0 * reward - 200.0)
    np.testing.assert_allclose(a.probabilities(), b.probabilities())


def test_constant_rewards_leave_it_uniform() -> None:
    bandit = SelectionStrengthBandit()
    for arm in [0, 1, 2] * 20:
        bandit.update(arm, -200.0)  # MountainCar before it is ever solved
    np.testing.assert_allclose(bandit.probabilities(), 1 / 3)


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"strengths": (1.0,)}, "strengths"),
        ({"strengths": (0.0, -1.0)}, "strengths"),
        ({"step_size": 0.0}, "step_size"),
        ({"exploration": 0.0}, "exploration"),
        ({"share": 1.0}, "share"),
        ({"history": 1}, "history"),
    ],
)
def test_bad_knobs_are_named(kwargs: dict, name: str) -> None:
    with pytest.raises(ValueError, match=name):
        SelectionStrengthBandit(**kwargs)


def test_window_credit_goes_to_the_window_that_trained_the_next_one() -> None:
    bandit = SelectionStrengthBandit()
    credit = WindowedReturnCredit(bandit, window=100, seed=0)
    updates: list[tuple[int, float]] = []
    bandit.update = lambda arm, reward: updates.append((arm, reward))  # type: ignore[method-assign]
    credit.record_episode(10.0)
    assert not credit.step(99)
    assert credit.step(100)  # window 0 closes with R = 10: nothing to compare yet
    assert updates == []
    credit.record_episode(30.0)
    credit.record_episode(50.0)
    assert credit.step(200)  # window 1 closes with R = 40: window 0's arm gets +30
    assert updates == [(credit.arms[0], 30.0)]
    assert credit.step(300)  # no episode in window 2: no credit for window 1
    assert len(updates) == 1
    with pytest.warns(UserWarning, match="not finite"):
        credit.record_episode(float("nan"))
    credit.record_episode(float("inf"))  # warned once only
    assert credit.step(400)
    assert len(updates) == 1
    assert credit.strength == bandit.strengths[credit.arms[-1]]


def test_window_rejects_a_bad_length() -> None:
    with pytest.raises(ValueError, match="window"):
        WindowedReturnCredit(SelectionStrengthBandit(), window=0)


def _auto_dqn(**kwargs: object) -> "ComplementaryDQN":
    from sb3_complementary import ComplementaryDQN

    settings = {"strength_window": 300, "train_freq": 200, "refresh_interval": 200}
    return ComplementaryDQN(
        "MlpPolicy",
        "CartPole-v1",
        seed=0,
        learning_starts=200,
        buffer_size=5000,
        alpha="auto",
        extractor_kwargs=settings,
        **kwargs,  # type: ignore[arg-type]
    )


def test_auto_sets_the_draws_strength_per_window_and_credits_the_returns() -> None:
    model = _auto_dqn()
    credit = model.strength_credit
    assert credit is not None and model.learned_strength
    assert model.replay_buffer.alpha == credit.strength  # the first window's, before any step
    seen: list[float] = []
    original = model.set_alpha
    model.set_alpha = lambda alpha: (seen.append(alpha), original(alpha))[1]  # type: ignore[method-assign]
    model.learn(3000)
    assert len(credit.arms) >= 3000 // 300 - 1  # a window closes at the first rollout end past its length
    assert seen == [credit.bandit.strengths[arm] for arm in credit.arms[1:]]
    assert model.replay_buffer.alpha == model.alpha == credit.strength
    assert len(credit.bandit.raw_rewards) > 0  # episodes ended in consecutive windows: credit was given
    assert not np.allclose(credit.bandit.probabilities(), 1 / 3)
    diagnostics = model.replay_diagnostics()  # what the bandit learned, for the run file and the logger
    assert diagnostics["strength"] == model.alpha
    probabilities = [diagnostics[f"p_strength_{s:g}"] for s in credit.bandit.strengths]
    np.testing.assert_allclose(probabilities, credit.bandit.probabilities())


def test_auto_survives_save_and_load(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from sb3_complementary import ComplementaryDQN

    model = _auto_dqn()
    model.learn(1500)
    model.save(tmp_path / "auto.zip")
    loaded = ComplementaryDQN.load(tmp_path / "auto.zip", env=model.get_env())
    assert loaded.learned_strength and loaded.strength_credit is not None
    assert loaded.strength_credit.arms == model.strength_credit.arms  # type: ignore[union-attr]
    np.testing.assert_array_equal(loaded.strength_credit.bandit.log_weights, model.strength_credit.bandit.log_weights)  # type: ignore[union-attr]
    assert loaded.alpha == model.alpha
    loaded.learn(600, reset_num_timesteps=False)
    assert len(loaded.strength_credit.arms) > len(model.strength_credit.arms)  # type: ignore[union-attr]


def test_the_default_has_no_learned_strength() -> None:
    from sb3_complementary import ComplementaryDQN

    model = ComplementaryDQN("MlpPolicy", "CartPole-v1", seed=0)
    assert model.strength_credit is None and not model.learned_strength and model.alpha == 1.0
    assert "strength" not in model.replay_diagnostics()


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"alpha": "learned"}, "alpha"),
        ({"extractor_kwargs": {"strength_window": 100}}, "only take effect with alpha='auto'"),
        ({"alpha": "auto", "extractor_kwargs": {"strength_window": 0}}, "strength_window"),
        ({"alpha": "auto", "extractor_kwargs": {"strengths": (1.0,)}}, "strengths"),
        ({"alpha": "auto", "extractor_kwargs": {"strength_share": 1.0}}, "strength_share"),
        ({"alpha": "auto", "extractor_kwargs": {"strength_exploration": 0.0}}, "strength_exploration"),
    ],
)
def test_bad_strength_settings_are_named(kwargs: dict, match: str) -> None:
    from sb3_complementary import ComplementaryDQN

    with pytest.raises(ValueError, match=match):
        ComplementaryDQN("MlpPolicy", "CartPole-v1", **kwargs)
