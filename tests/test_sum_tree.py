"""SumTree: sampling follows the priorities, the sums stay consistent, and the edge cases hold."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy import stats

from sb3_complementary.common.sum_tree import SumTree

PRIORITIES = np.array([0.0, 1.0, 2.5, 3.0, 0.0, 4.0, 0.25, 7.0, 1.5, 0.0, 2.0])  # 11 leaves: not a power of two


def tree_with(priorities: np.ndarray) -> SumTree:
    tree = SumTree(len(priorities))
    tree.update(np.arange(len(priorities)), priorities)
    return tree


def assert_consistent(tree: SumTree) -> None:
    """Every internal node is the sum of its children, and padding leaves are zero."""
    internal = np.arange(1, tree.n_leaves)
    np.testing.assert_allclose(
        tree.nodes[internal], tree.nodes[2 * internal] + tree.nodes[2 * internal + 1], rtol=1e-12, atol=1e-12
    )
    assert np.all(tree.nodes[tree.n_leaves + tree.capacity :] == 0)
    assert tree.total == pytest.approx(float(tree.leaves.sum()), rel=1e-12, abs=1e-12)


def chi_square_pvalue(counts: np.ndarray, priorities: np.ndarray) -> float:
    positive = priorities > 0
    expected = counts.sum() * priorities[positive] / priorities.sum()
    return float(stats.chisquare(counts[positive], expected).pvalue)


def test_find_frequencies_match_priorities():
    """i.i.d. uniform values through find(): a multinomial with p_i / total (chi-square, fixed seed)."""
    tree = tree_with(PRIORITIES)
    rng = np.random.default_rng(0)
    leaves = tree.find(rng.random(200_000) * tree.total)
    counts = np.bincount(leaves, minlength=len(PRIORITIES))
    assert np.all(counts[PRIORITIES == 0] == 0)
    assert chi_square_pvalue(counts, PRIORITIES) > 1e-3


def test_stratified_frequencies_match_priorities():
    """Stratified batches keep each leaf's marginal frequency at p_i / total."""
    tree = tree_with(PRIORITIES)
    rng = np.random.default_rng(1)
    leaves = np.concatenate([tree.sample_stratified(rng.random(32)) for _ in range(5_000)])
    counts = np.bincount(leaves, minlength=len(PRIORITIES))
    assert np.all(counts[PRIORITIES == 0] == 0)
    assert chi_square_pvalue(counts, PRIORITIES) > 1e-3
    # Stratification: over many batches each leaf's share is within 1% (absolute) of its probability.
    np.testing.assert_allclose(counts / counts.sum(), PRIORITIES / PRIORITIES.sum(), atol=0.01)


def test_chi_square_detects_wrong_priorities():
    """Sanity check of the test itself: frequencies drawn from other priorities are rejected."""
    tree = tree_with(PRIORITIES)
    rng = np.random.default_rng(0)
    counts = np.bincount(tree.find(rng.random(200_000) * tree.total), minlength=len(PRIORITIES))
    skewed = PRIORITIES.copy()
    skewed[7] *= 1.1
    assert chi_square_pvalue(counts, skewed) < 1e-3


def test_updates_keep_root_equal_to_sum():
    tree = SumTree(1000)
    rng = np.random.default_rng(2)
    for _ in range(200):
        indices = rng.integers(0, 1000, size=64)
        tree.update(indices, rng.exponential(size=64))
    assert_consistent(tree)
    assert tree.total == pytest.approx(tree.leaves.sum(), rel=1e-12)


def test_duplicate_indices_keep_last_value():
    tree = SumTree(8)
    tree.update(np.array([3, 3, 5, 3]), np.array([1.0, 2.0, 4.0, 7.0]))
    assert tree.leaves[3] == 7.0
    assert tree.leaves[5] == 4.0
    assert tree.total == 11.0
    assert_consistent(tree)


def test_set_all_equals_incremental_updates():
    rng = np.random.default_rng(3)
    priorities = rng.exponential(size=37)
    incremental = SumTree(37)
    for start in range(0, 37, 5):
        incremental.update(np.arange(start, min(start + 5, 37)), priorities[start : start + 5])
    rebuilt = SumTree(37)
    rebuilt.update(np.arange(37), rng.exponential(size=37))  # stale values that set_all must replace
    rebuilt.set_all(priorities)
    np.testing.assert_allclose(rebuilt.nodes, incremental.nodes, rtol=1e-12)
    np.testing.assert_array_equal(rebuilt.leaves, priorities)


def test_set_all_rejects_wrong_shape_and_bad_values():
    tree = SumTree(5)
    with pytest.raises(ValueError, match="5"):
        tree.set_all(np.ones(4))
    with pytest.raises(ValueError, match="finite"):
        tree.set_all(np.array([1.0, np.nan, 1.0, 1.0, 1.0]))
    with pytest.raises(ValueError, match="finite"):
        tree.update(np.array([0]), np.array([-1.0]))
    with pytest.raises(ValueError, match="finite"):
        tree.update(np.array([0]), np.array([np.inf]))


def test_all_zero_priorities_raise_on_sampling():
    tree = SumTree(6)
    with pytest.raises(ValueError, match="zero"):
        tree.sample_stratified(np.array([0.5, 0.5]))
    tree.update(np.arange(6), np.ones(6))
    tree.update(np.arange(6), np.zeros(6))
    with pytest.raises(ValueError, match="zero"):
        tree.sample_stratified(np.array([0.5]))


def test_capacity_must_be_positive():
    with pytest.raises(ValueError, match="capacity"):
        SumTree(0)


def test_single_leaf():
    tree = SumTree(1)
    assert tree.depth == 0
    tree.update(np.array([0]), np.array([2.5]))
    assert tree.total == 2.5
    np.testing.assert_array_equal(tree.sample_stratified(np.array([0.0, 0.3, 0.99])), [0, 0, 0])
    np.testing.assert_array_equal(tree.find(np.array([0.0, 2.4])), [0, 0])


@pytest.mark.parametrize("capacity", [3, 5, 6, 7, 9, 1000])
def test_capacity_not_power_of_two_never_returns_padding(capacity):
    tree = SumTree(capacity)
    tree.update(np.arange(capacity), np.ones(capacity))
    assert tree.n_leaves >= capacity and tree.n_leaves & (tree.n_leaves - 1) == 0
    values = np.concatenate([np.linspace(0, tree.total, 101)[:-1], [np.nextafter(tree.total, 0)]])
    leaves = tree.find(values)
    assert leaves.max() == capacity - 1
    assert leaves.min() == 0
    # The last leaf is reached at its interval, not by clamping a padding index.
    assert tree.find(np.array([capacity - 0.5]))[0] == capacity - 1
    assert tree.find(np.array([capacity - 1.5]))[0] == capacity - 2


def test_zero_priority_leaves_never_returned_at_boundaries():
    """Values on the exact cumulative boundaries next to zero-priority leaves skip them."""
    priorities = np.array([1.0, 0.0, 0.0, 2.0, 0.0, 0.5, 0.0, 0.0])
    tree = tree_with(priorities)
    cumulative = np.cumsum(priorities)
    values = np.concatenate([cumulative[:-1], np.nextafter(cumulative[:-1], 0), [0.0, np.nextafter(tree.total, 0)]])
    values = values[values < tree.total]
    leaves = tree.find(values)
    assert np.all(priorities[leaves] > 0), leaves
    np.testing.assert_array_equal(tree.find(np.array([1.0, 2.999, 3.0, 3.4999])), [3, 3, 5, 5])


def test_zero_priority_leaves_never_sampled_after_update():
    rng = np.random.default_rng(4)
    tree = SumTree(50)
    tree.update(np.arange(50), rng.exponential(size=50))
    zeroed = rng.choice(50, size=20, replace=False)
    tree.update(zeroed, np.zeros(20))
    leaves = np.concatenate([tree.sample_stratified(rng.random(64)) for _ in range(500)])
    assert not np.isin(leaves, zeroed).any()
    assert set(np.unique(leaves)) == set(np.setdiff1d(np.arange(50), zeroed))


# --------------------------------------------------------------------------- property-based

priority_values = st.floats(min_value=1e-6, max_value=1e3, allow_nan=False, allow_infinity=False)


@st.composite
def update_sequences(draw):
    capacity = draw(st.integers(min_value=1, max_value=70))
    n_updates = draw(st.integers(min_value=1, max_value=12))
    updates = []
    for _ in range(n_updates):
        size = draw(st.integers(min_value=1, max_value=2 * capacity))
        indices = draw(arrays(np.int64, size, elements=st.integers(0, capacity - 1)))
        values = draw(arrays(np.float64, size, elements=priority_values | st.just(0.0)))
        updates.append((indices, values))
    return capacity, updates


@settings(max_examples=150, deadline=None, derandomize=True, database=None)
@given(update_sequences())
def test_random_update_sequences_keep_root_equal_to_sum(case):
    capacity, updates = case
    tree = SumTree(capacity)
    expected = np.zeros(capacity)
    for indices, values in updates:
        tree.update(indices, values)
        expected[indices] = values  # NumPy fancy assignment also keeps the last duplicate
    np.testing.assert_array_equal(tree.leaves, expected)
    assert_consistent(tree)
    assert tree.total == pytest.approx(expected.sum(), rel=1e-12, abs=1e-12)


@settings(max_examples=150, deadline=None, derandomize=True, database=None)
@given(
    arrays(np.float64, st.integers(1, 70), elements=priority_values | st.just(0.0)),
    st.lists(st.floats(min_value=0.0, max_value=1.0, exclude_max=True), min_size=1, max_size=30),
)
def test_find_returns_leaf_whose_interval_contains_value(priorities, fractions):
    tree = tree_with(priorities)
    if tree.total <= 0:
        return
    values = np.array(fractions) * tree.total
    values = values[values < tree.total]  # the product can round up to the total
    leaves = tree.find(values)
    assert np.all((leaves >= 0) & (leaves < len(priorities)))
    assert np.all(priorities[leaves] > 0), (priorities, values, leaves)
    cumulative = np.concatenate([[0.0], np.cumsum(priorities)])
    tolerance = 1e-9 * tree.total
    assert np.all(cumulative[leaves] - tolerance <= values)
    assert np.all(values < cumulative[leaves + 1] + tolerance)
