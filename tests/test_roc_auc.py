"""roc_auc: the NumPy ROC AUC against hand-computed values, a pairwise count, and scikit-learn's."""

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from sb3_complementary.common.extractor import average_ranks, roc_auc


def pairwise_auc(labels: np.ndarray, scores: np.ndarray) -> float:
    """The definition, O(n_pos * n_neg): P(positive > negative) + 0.5 * P(tie)."""
    pos = scores[labels.astype(bool)][:, None]
    neg = scores[~labels.astype(bool)][None, :]
    return float(((pos > neg).sum() + 0.5 * (pos == neg).sum()) / (pos.size * neg.size))


@pytest.mark.parametrize(
    ("labels", "scores", "expected"),
    [
        # Positives {0.35, 0.8} against negatives {0.1, 0.4}: 3 of the 4 pairs are ordered right.
        ([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8], 0.75),
        # Positives {1, 2} against negatives {1, 0}: pairs (1,1) tie = 0.5, the other three = 1 → 3.5 / 4.
        ([1, 0, 1, 0], [1.0, 1.0, 2.0, 0.0], 0.875),
        # One positive among three negatives, tied with one of them and above the others: (1 + 1 + 0.5) / 3.
        ([0, 1, 0, 0], [-3.0, 5.0, 5.0, 2.0], 2.5 / 3),
        ([0, 0, 1, 1], [0.0, 1.0, 2.0, 3.0], 1.0),  # perfectly separated
        ([1, 1, 0, 0], [0.0, 1.0, 2.0, 3.0], 0.0),  # perfectly reversed
        ([1, 0, 1, 0, 0], [7.0] * 5, 0.5),  # a constant score cannot tell the classes apart
        ([True, False, False], [0.2, 0.9, 0.1], 0.5),  # boolean labels: 1 of 2 pairs ordered right
    ],
)
def test_hand_computed_values(labels: list, scores: list, expected: float) -> None:
    assert roc_auc(np.array(labels), np.array(scores)) == pytest.approx(expected, abs=1e-12)


def test_average_ranks_share_the_mean_rank_of_a_tie() -> None:
    # Sorted: 1 (rank 1), 2 2 (ranks 2, 3 → 2.5), 5 (rank 4), 9 9 9 (ranks 5, 6, 7 → 6).
    np.testing.assert_array_equal(average_ranks(np.array([9, 2, 5, 9, 1, 2, 9])), [6, 2.5, 4, 6, 1, 2.5, 6])


@pytest.mark.parametrize("labels", [[1, 1, 1], [0, 0, 0], []])
def test_one_empty_class_is_nan(labels: list) -> None:
    assert np.isnan(roc_auc(np.array(labels), np.arange(len(labels), dtype=float)))


def test_rejects_mismatched_or_non_finite_input() -> None:
    with pytest.raises(ValueError, match="same length"):
        roc_auc(np.array([0, 1, 1]), np.array([0.1, 0.2]))
    with pytest.raises(ValueError, match="finite"):
        roc_auc(np.array([0, 1]), np.array([0.1, np.nan]))


# Scores from a few integers give many ties; from floats, almost none.
SCORES = st.one_of(st.integers(-3, 3).map(float), st.floats(-1e3, 1e3, allow_nan=False))
SAMPLES = st.lists(st.tuples(st.booleans(), SCORES), min_size=2, max_size=60)


@settings(max_examples=200, deadline=None)
@given(SAMPLES)
def test_matches_the_pairwise_definition(samples: list[tuple[bool, float]]) -> None:
    labels = np.array([label for label, _ in samples])
    scores = np.array([score for _, score in samples])
    assume(0 < labels.sum() < len(labels))
    assert roc_auc(labels, scores) == pytest.approx(pairwise_auc(labels, scores), abs=1e-12)
    # Swapping the classes mirrors the curve.
    assert roc_auc(~labels, scores) == pytest.approx(1.0 - pairwise_auc(labels, scores), abs=1e-12)


@settings(max_examples=200, deadline=None)
@given(SAMPLES)
def test_matches_scikit_learn(samples: list[tuple[bool, float]]) -> None:
    metrics = pytest.importorskip("sklearn.metrics")
    labels = np.array([int(label) for label, _ in samples])
    scores = np.array([score for _, score in samples])
    assume(0 < labels.sum() < len(labels))
    assert roc_auc(labels, scores) == pytest.approx(float(metrics.roc_auc_score(labels, scores)), abs=1e-9)
