"""Normalised score, AUC and final score on hand-made curves; the report's seeded rliable intervals."""

from __future__ import annotations

import numpy as np
import pytest
from rliable import metrics

from benchmarks.harness.metrics import auc, final_score
from benchmarks.harness.normalize import normalized_score
from benchmarks.harness.report import interval_estimates, performance_profiles


def test_normalized_score() -> None:
    # CartPole-like: random 20, reference 500.
    scores = normalized_score(np.array([20.0, 260.0, 500.0, 740.0]), r_random=20.0, r_ref=500.0)
    np.testing.assert_allclose(scores, [0.0, 0.5, 1.0, 1.5])
    # Negative returns (MountainCar-like): random -200, reference -100; -150 is halfway.
    assert float(normalized_score(-150.0, r_random=-200.0, r_ref=-100.0)) == pytest.approx(0.5)
    with pytest.raises(ValueError, match="undefined"):
        normalized_score(1.0, r_random=3.0, r_ref=3.0)


def test_auc_and_final_on_hand_made_curves() -> None:
    early = np.array([0.0, 1.0, 1.0, 1.0, 1.0])  # learns at once
    late = np.array([0.0, 0.0, 0.0, 0.0, 1.0])  # learns at the end
    assert float(auc(early)) == pytest.approx(0.8)
    assert float(auc(late)) == pytest.approx(0.2)
    assert float(final_score(early)) == pytest.approx(1.0)
    assert float(final_score(late)) == pytest.approx(1.0 / 3.0)
    stacked = np.stack([early, late])
    np.testing.assert_allclose(auc(stacked), [0.8, 0.2])
    np.testing.assert_allclose(final_score(stacked, last=1), [1.0, 1.0])


def test_metric_errors() -> None:
    with pytest.raises(ValueError, match="empty"):
        auc(np.array([]))
    with pytest.raises(ValueError, match="at least 3 eval points"):
        final_score(np.array([1.0, 2.0]))


def test_interval_estimates_are_reproducible_and_stratified() -> None:
    rng = np.random.default_rng(0)
    scores = rng.normal(size=(10, 3))
    other = rng.normal(size=(6, 3))
    np.random.seed(123)
    before = np.random.get_state()[1].copy()
    points, cis = interval_estimates({"a": scores}, np.mean, reps=200, seed=3)
    # The caller's global generator is left as it was.
    np.testing.assert_array_equal(np.random.get_state()[1], before)
    # Same seed, same CI: rliable draws from the global generator, which is seeded before each call.
    _, cis2 = interval_estimates({"a": scores}, np.mean, reps=200, seed=3)
    np.testing.assert_array_equal(cis["a"], cis2["a"])
    _, cis_seed4 = interval_estimates({"a": scores}, np.mean, reps=200, seed=4)
    assert not np.array_equal(cis["a"], cis_seed4["a"])
    # A contender's CI does not depend on the others on the page.
    _, cis_both = interval_estimates({"b": other, "a": scores}, np.mean, reps=200, seed=3)
    np.testing.assert_array_equal(cis["a"], cis_both["a"])
    assert points["a"] == pytest.approx(scores.mean())
    assert cis["a"].shape == (2, 1)
    assert cis["a"][0] <= points["a"] <= cis["a"][1] and cis["a"][0] < cis["a"][1]
    # Resampling is within tasks: a task's column only ever holds that task's values.
    constant_tasks = np.tile(np.array([0.0, 10.0, 20.0]), (5, 1))
    _, ci_const = interval_estimates({"c": constant_tasks}, lambda x: x.mean(axis=0), reps=50)
    np.testing.assert_allclose(ci_const["c"], [[0.0, 10.0, 20.0], [0.0, 10.0, 20.0]])


def test_interval_estimates_of_pairs_with_different_run_counts() -> None:
    x = np.ones((4, 2))
    y = np.zeros((7, 2))
    points, cis = interval_estimates({"x,y": (x, y)}, lambda a, b: a.mean() - b.mean(), reps=50)
    assert points["x,y"] == 1.0
    np.testing.assert_allclose(cis["x,y"], [[1.0], [1.0]])
    # rliable's probability of improvement: X always above Y on every task.
    rng = np.random.default_rng(1)
    better, worse = rng.uniform(1, 2, size=(5, 3)), rng.uniform(0, 1, size=(4, 3))
    points, cis = interval_estimates(
        {"b,w": (better, worse), "w,b": (worse, better)}, metrics.probability_of_improvement, reps=50
    )
    assert points["b,w"] == pytest.approx(1.0) and points["w,b"] == pytest.approx(0.0)
    np.testing.assert_allclose(cis["b,w"], [[1.0], [1.0]])


def test_performance_profiles() -> None:
    scores = np.array([[0.1, 0.6], [0.4, 0.9], [0.2, 0.8]])
    tau = np.array([0.0, 0.5, 1.0])
    profiles, cis = performance_profiles({"a": scores}, tau, reps=100, seed=0)
    np.testing.assert_allclose(profiles["a"], [1.0, 0.5, 0.0])  # fraction of the 6 scores above tau
    assert cis["a"].shape == (2, 3)
    # Stratified: every resample keeps 3 runs per task, and task 2's runs are all above 0.5.
    assert cis["a"][0, 1] == pytest.approx(0.5) and cis["a"][1, 1] == pytest.approx(0.5)
    _, cis2 = performance_profiles({"a": scores}, tau, reps=100, seed=0)
    np.testing.assert_array_equal(cis["a"], cis2["a"])


def test_spread_over_seeds_is_the_sample_std():
    from benchmarks.harness.metrics import mean_pm_std

    assert mean_pm_std([1.0, 2.0, 3.0], 3) == "2.000 ± 1.000"  # ddof=0 would print 0.816
    assert mean_pm_std([0.5], 2) == "0.50"
