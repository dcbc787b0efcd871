"""Normalised score, AUC and final score on hand-made curves; the bootstrap intervals."""

from __future__ import annotations

import numpy as np
import pytest

from sb3_complementary.benchmark.bootstrap import independent_interval, stratified_interval
from sb3_complementary.benchmark.metrics import auc, final_score
from sb3_complementary.benchmark.normalize import normalized_score


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


def test_stratified_interval_is_reproducible_and_covers_the_point() -> None:
    rng = np.random.default_rng(0)
    scores = rng.normal(size=(10, 3))
    point, ci = stratified_interval(scores, np.mean, reps=200, seed=3)
    _, ci2 = stratified_interval(scores, np.mean, reps=200, seed=3)
    np.testing.assert_array_equal(ci, ci2)
    assert point.shape == (1,) and ci.shape == (2, 1)
    assert ci[0, 0] <= point[0] <= ci[1, 0]
    # Resampling is within tasks: a task's column only ever holds that task's values.
    constant_tasks = np.tile(np.array([0.0, 10.0, 20.0]), (5, 1))
    _, ci_const = stratified_interval(constant_tasks, lambda x: x.mean(axis=0), reps=50)
    np.testing.assert_allclose(ci_const, [[0.0, 10.0, 20.0], [0.0, 10.0, 20.0]])


def test_independent_interval_different_run_counts() -> None:
    x = np.ones((4, 2))
    y = np.zeros((7, 2))
    point, ci = independent_interval([x, y], lambda a, b: a.mean() - b.mean(), reps=50)
    assert point[0] == 1.0
    np.testing.assert_allclose(ci, [[1.0], [1.0]])
