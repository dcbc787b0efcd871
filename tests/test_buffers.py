"""ComplementaryReplayBuffer: SB3 compatibility, IS weights, n-step gather, score hygiene, Dict variant."""

import re
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch as th
from gymnasium import spaces
from stable_baselines3.common.buffers import NStepReplayBuffer, ReplayBuffer
from stable_baselines3.common.type_aliases import DictReplayBufferSamples, ReplayBufferSamples

from sb3_complementary import ComplementaryDictReplayBuffer, ComplementaryReplayBuffer
from tests.conftest import fill_buffer

OBS = spaces.Box(-np.inf, np.inf, (3,), np.float32)
ACT = spaces.Discrete(4)


def make_buffer(buffer_size=40, **kwargs) -> ComplementaryReplayBuffer:
    return ComplementaryReplayBuffer(buffer_size, OBS, ACT, device="cpu", **kwargs)


def assert_same_samples(ours, theirs, fields=("observations", "actions", "next_observations", "dones", "rewards")):
    for field in fields:
        a, b = getattr(ours, field), getattr(theirs, field)
        assert a.shape == b.shape, field
        assert a.dtype == b.dtype, field
        assert th.equal(a, b), f"{field}: {a.flatten()[:8]} != {b.flatten()[:8]}"


# --------------------------------------------------------------------------- SB3 arguments


@pytest.mark.parametrize(
    "kwargs",
    [
        {"n_envs": 3},
        {"n_envs": 2, "optimize_memory_usage": True, "handle_timeout_termination": False},
        {"handle_timeout_termination": False},
        {"handle_timeout_termination": True},
        {"n_envs": 2, "n_steps": 3, "gamma": 0.9},
    ],
)
def test_accepts_every_argument_sb3_passes(kwargs):
    buffer = make_buffer(60, **kwargs)
    n_envs = kwargs.get("n_envs", 1)
    assert buffer.buffer_size == 60 // n_envs
    assert buffer.tree is None  # built by the first draw that reads it
    fill_buffer(buffer, 45, episode_lengths=(4, 7, 3)[:n_envs], timeout_every=3)
    batch = buffer.sample_weighted(16)
    assert buffer.tree is not None and buffer.tree.capacity == buffer.buffer_size * n_envs
    assert isinstance(batch.samples, ReplayBufferSamples)
    assert batch.samples.observations.shape == (16, 3)
    assert batch.weights.shape == (16, 1)
    assert batch.indices.shape == (16,) and batch.control.shape == (16,)
    if kwargs.get("n_steps", 1) > 1:
        assert batch.samples.discounts is not None
    plain = buffer.sample(8)
    assert isinstance(plain, ReplayBufferSamples)


def test_sb3_rejects_optimize_memory_with_timeouts():
    with pytest.raises(ValueError, match="optimize_memory_usage"):
        make_buffer(optimize_memory_usage=True, handle_timeout_termination=True)


def test_n_steps_with_optimize_memory_usage_is_rejected():
    with pytest.raises(ValueError, match="n_steps"):
        make_buffer(optimize_memory_usage=True, handle_timeout_termination=False, n_steps=3)


# --------------------------------------------------------------------------- equality with SB3


def twin_buffers(sb3_class, n_envs=2, buffer_size=16, n_rows=13, **kwargs):
    ours = make_buffer(buffer_size, n_envs=n_envs, **kwargs)
    sb3_kwargs = {k: v for k, v in kwargs.items() if k in ("optimize_memory_usage", "handle_timeout_termination")}
    if sb3_class is NStepReplayBuffer:
        sb3_kwargs.update(n_steps=kwargs["n_steps"], gamma=kwargs["gamma"])
    theirs = sb3_class(buffer_size, OBS, ACT, device="cpu", n_envs=n_envs, **sb3_kwargs)
    for buffer in (ours, theirs):
        fill_buffer(buffer, n_rows, episode_lengths=(3, 5)[:n_envs], timeout_every=2, seed=7)
    return ours, theirs


def sb3_samples_at(buffer: ReplayBuffer, rows: np.ndarray, envs: np.ndarray, seed: int = 123):
    """SB3's ``_get_samples`` for given rows, with its env draw aligned to ``envs`` through the global seed."""
    np.random.seed(seed)
    assert np.array_equal(np.random.randint(0, buffer.n_envs, size=rows.shape), envs)
    np.random.seed(seed)
    return buffer._get_samples(rows)


def all_rows_and_envs(buffer, seed=123):
    """Every sampleable row once, with the env index SB3 will draw for it under ``seed``."""
    rows = np.arange(buffer.buffer_size if buffer.full else buffer.pos)
    if buffer.optimize_memory_usage and buffer.full:
        rows = rows[rows != buffer.pos]  # SB3 never asks for the overwritten row
    np.random.seed(seed)
    envs = np.random.randint(0, buffer.n_envs, size=rows.shape)
    return rows, envs


@pytest.mark.parametrize("n_rows", [11, 13, 40])  # partly filled, just wrapped, wrapped several times
def test_n_step_samples_equal_sb3(n_rows):
    ours, theirs = twin_buffers(NStepReplayBuffer, buffer_size=24, n_rows=n_rows, n_steps=3, gamma=0.99)
    for seed in range(4):
        rows, envs = all_rows_and_envs(theirs, seed)
        expected = sb3_samples_at(theirs, rows, envs, seed)
        got = ours.get_samples_at(rows * ours.n_envs + envs)
        assert_same_samples(got, expected)
        np.testing.assert_allclose(got.discounts.numpy(), expected.discounts.numpy(), rtol=1e-6)


def test_n_step_discounts_bit_equal_to_sb3():
    ours, theirs = twin_buffers(NStepReplayBuffer, buffer_size=24, n_rows=40, n_steps=3, gamma=0.99)
    rows, envs = all_rows_and_envs(theirs)
    expected = sb3_samples_at(theirs, rows, envs)
    got = ours.get_samples_at(rows * ours.n_envs + envs)
    assert th.equal(got.discounts, expected.discounts)


@pytest.mark.parametrize("optimize_memory_usage", [False, True])
@pytest.mark.parametrize("n_rows", [11, 40])
def test_one_step_samples_equal_sb3(optimize_memory_usage, n_rows):
    ours, theirs = twin_buffers(
        ReplayBuffer,
        buffer_size=24,
        n_rows=n_rows,
        optimize_memory_usage=optimize_memory_usage,
        handle_timeout_termination=not optimize_memory_usage,
    )
    rows, envs = all_rows_and_envs(theirs)
    expected = sb3_samples_at(theirs, rows, envs)
    assert_same_samples(ours.get_samples_at(rows * ours.n_envs + envs), expected)


@pytest.mark.parametrize("optimize_memory_usage", [False, True])
@pytest.mark.parametrize("n_rows", [9, 40])
def test_uniform_fraction_one_samples_like_sb3(optimize_memory_usage, n_rows):
    """With uniform_fraction=1 the batch is exactly SB3's ``sample`` under the same global seed."""
    ours, theirs = twin_buffers(
        ReplayBuffer,
        buffer_size=24,
        n_rows=n_rows,
        optimize_memory_usage=optimize_memory_usage,
        handle_timeout_termination=not optimize_memory_usage,
        uniform_fraction=1.0,
    )
    ours.update_scores(np.arange(6), np.full(6, 50.0))  # scores must not matter
    for seed in range(3):
        np.random.seed(seed)
        got = ours.sample_weighted(32)
        after_ours = np.random.random()
        np.random.seed(seed)
        expected = theirs.sample(32)
        after_theirs = np.random.random()
        assert_same_samples(got.samples, expected)
        assert after_ours == after_theirs, "the two buffers consumed the global RNG differently"
        assert th.all(got.weights == 1.0)
        assert got.control.all()


# --------------------------------------------------------------------------- IS weights


def expected_probabilities(buffer, scores, indices, uniform_share):
    """``u / N + (1 - u) * p_i / sum(p)`` from first principles (not through the buffer's helper)."""
    priorities = (np.maximum(scores, buffer.score_floor) + buffer.epsilon) ** buffer.alpha
    n = len(scores)
    return uniform_share / n + (1 - uniform_share) * priorities[indices] / priorities.sum()


@pytest.mark.parametrize("uniform_fraction", [0.0, 0.25, 0.5])
@pytest.mark.parametrize("beta", [0.4, 1.0])
def test_is_weights_for_known_priorities(uniform_fraction, beta):
    buffer = make_buffer(30, n_envs=2, alpha=0.7, beta=beta, epsilon=0.01, uniform_fraction=uniform_fraction)
    fill_buffer(buffer, 15)
    n = 30
    scores = np.linspace(0.05, 3.0, n).astype(np.float32)
    buffer.update_scores(np.arange(n), scores)
    np.random.seed(0)
    batch = buffer.sample_weighted(64)
    n_uniform = round(64 * uniform_fraction)
    assert batch.control.sum() == n_uniform and batch.control[:n_uniform].all()
    probabilities = expected_probabilities(buffer, scores, batch.indices, n_uniform / 64)
    raw = (n * probabilities) ** -beta
    np.testing.assert_allclose(batch.raw_weights, raw, rtol=1e-6)
    np.testing.assert_allclose(batch.weights.numpy().reshape(-1), raw / raw.max(), rtol=1e-6)
    assert batch.weights.max().item() == pytest.approx(1.0)
    # The highest-priority transitions get the smallest weights.
    order = np.argsort(scores[batch.indices])
    assert np.all(np.diff(batch.raw_weights[order]) <= 1e-12)


def test_is_weights_partially_filled_buffer_use_stored_count():
    """N is the number of stored (sampleable) transitions, not the capacity."""
    buffer = make_buffer(100, alpha=1.0, beta=1.0, epsilon=0.0, score_floor=0.01)
    fill_buffer(buffer, 10)
    scores = np.arange(1, 11, dtype=np.float32)
    buffer.update_scores(np.arange(10), scores)
    batch = buffer.sample_weighted(20)
    probabilities = scores[batch.indices] / scores.sum()
    np.testing.assert_allclose(batch.raw_weights, 1.0 / (10 * probabilities), rtol=1e-6)
    assert batch.indices.max() < 10


def test_ess_fraction_on_known_priorities():
    """1 / (N * sum p^2): 1 for equal scores; for one heavy transition, the closed form of the mixture."""
    buffer = make_buffer(100, alpha=1.0, epsilon=0.0, score_floor=0.01, uniform_fraction=0.0)
    fill_buffer(buffer, 10)
    buffer.update_scores(np.arange(10), np.ones(10, dtype=np.float32))
    assert buffer.ess_fraction() == pytest.approx(1.0)
    scores = np.r_[9.0, np.ones(9)].astype(np.float32)  # p = [1/2, 1/18 x 9]
    buffer.update_scores(np.arange(10), scores)
    assert buffer.ess_fraction() == pytest.approx(1.0 / (10 * (0.25 + 9 / 18**2)))
    buffer.uniform_fraction = 0.5  # mixed with uniform: p = 0.5 / 10 + 0.5 * p_score
    mixed = 0.05 + 0.5 * scores / scores.sum()
    assert buffer.ess_fraction() == pytest.approx(1.0 / (10 * np.sum(mixed**2)))


def test_score_proportional_sampling_frequencies():
    buffer = make_buffer(8, alpha=1.0, epsilon=1e-12, score_floor=0.0, uniform_fraction=0.0)
    fill_buffer(buffer, 8)
    scores = np.array([0, 1, 2, 0, 4, 1, 0, 8], dtype=np.float32)
    buffer.update_scores(np.arange(8), scores)
    np.random.seed(0)
    counts = np.zeros(8)
    for _ in range(400):
        counts += np.bincount(buffer.sample_weighted(32).indices, minlength=8)
    assert np.all(counts[scores == 0] == 0)
    np.testing.assert_allclose(counts / counts.sum(), scores / scores.sum(), atol=0.01)


# --------------------------------------------------------------------------- optimize_memory_usage


@pytest.mark.parametrize("uniform_fraction", [0.0, 0.5])
def test_optimize_memory_usage_never_samples_invalid_row(uniform_fraction):
    buffer = make_buffer(
        20, n_envs=2, optimize_memory_usage=True, handle_timeout_termination=False, uniform_fraction=uniform_fraction
    )
    np.random.seed(0)
    for n_rows in range(1, 35):
        fill_buffer(buffer, 1, seed=n_rows)
        # Make every valid transition as likely as a freshly added one: only the tree can exclude the invalid row.
        valid = buffer.valid_indices()
        buffer.update_scores(valid, np.full(len(valid), 1.0))
        if buffer.full:
            invalid = buffer.pos * 2 + np.arange(2)
            assert np.all(buffer.tree.leaves[invalid] == 0)
            assert not np.isin(invalid, buffer.valid_indices()).any()
            assert buffer.n_valid() == len(buffer.valid_indices()) == 18
        for _ in range(10):
            batch = buffer.sample_weighted(16)
            rows = batch.indices // 2
            assert not (buffer.full and np.any(rows == buffer.pos)), (n_rows, buffer.pos, rows)
            assert np.all(rows < (buffer.buffer_size if buffer.full else buffer.pos))


@pytest.mark.parametrize("tree_first", [True, False], ids=["rescored-tree", "tree-built-after"])
def test_optimize_memory_usage_refresh_keeps_invalid_row_out(tree_first):
    """Whether the re-score writes into a tree or a draw builds the tree from the re-scored scores."""
    buffer = make_buffer(20, n_envs=2, optimize_memory_usage=True, handle_timeout_termination=False)
    fill_buffer(buffer, 27)
    if tree_first:
        buffer._require_tree()
    indices = buffer.valid_indices()
    buffer.set_all_scores(indices, np.full(len(indices), 0.9))
    assert (buffer.tree is not None) == tree_first, "set_all_scores builds no tree, and keeps one that exists"
    invalid = buffer.pos * 2 + np.arange(2)
    assert not np.isin(invalid, indices).any()
    assert np.all(buffer._require_tree().leaves[invalid] == 0)
    np.random.seed(1)
    for _ in range(50):
        assert not np.any(buffer.sample_weighted(16).indices // 2 == buffer.pos)


@pytest.mark.parametrize("n_envs", [1, 2])
def test_the_tree_is_built_only_when_a_draw_or_an_update_reads_it(n_envs):
    """
    Storage, SB3's uniform draws and the queries keep no tree; the first weighted draw builds it
    from the stored scores, and it equals a tree kept up to date from the start.
    """
    lazy = make_buffer(30, n_envs=n_envs, alpha=0.7, initial_score="max")
    eager = make_buffer(30, n_envs=n_envs, alpha=0.7, initial_score="max")
    eager._require_tree()
    for buffer in (lazy, eager):
        fill_buffer(buffer, 9)
    lazy.sample(4)
    lazy.sample_uniform(4)
    for query in (lazy.ess_fraction, lazy.replay_weights, lazy.task_shares, lazy._leaves):
        query()
    lazy.sampling_probabilities(lazy.valid_indices(), 0.0)
    lazy.set_all_scores(lazy.valid_indices(), np.linspace(0.1, 2.0, 9 * n_envs))
    lazy.rebuild_priorities()
    assert lazy.tree is None, "storage, uniform draws, queries or a re-score built the tree"
    eager.set_all_scores(eager.valid_indices(), np.linspace(0.1, 2.0, 9 * n_envs))
    fill_buffer(lazy, 3, seed=1)
    fill_buffer(eager, 3, seed=1)
    np.testing.assert_allclose(lazy._leaves()[0], eager._leaves()[0])  # the queries see what a draw will
    np.random.seed(0)
    lazy_batch = lazy.sample_weighted(8)
    np.random.seed(0)
    eager_batch = eager.sample_weighted(8)
    assert lazy.tree is not None
    np.testing.assert_allclose(lazy.tree.leaves, eager.tree.leaves)
    np.testing.assert_array_equal(lazy_batch.indices, eager_batch.indices)
    np.testing.assert_allclose(lazy_batch.raw_weights, eager_batch.raw_weights)
    fresh = make_buffer(30, n_envs=n_envs)
    fill_buffer(fresh, 4)
    fresh.update_scores(np.array([0]), np.array([3.0]))
    assert fresh.tree is not None and fresh.tree.leaves[0] == pytest.approx(fresh.priority(3.0))


# --------------------------------------------------------------------------- terminals


def add_rows(buffer, rewards, dones, timeouts=None):
    """Add rows given per-env rewards/dones (each an (n_rows, n_envs) array)."""
    n_envs = buffer.n_envs
    for t in range(len(rewards)):
        obs = np.zeros((n_envs, 3), dtype=np.float32)
        infos = [
            {"TimeLimit.truncated": bool(timeouts[t][e]) if timeouts is not None else False} for e in range(n_envs)
        ]
        buffer.add(obs, obs, np.zeros((n_envs, 1)), np.asarray(rewards[t], dtype=np.float32),
                   np.asarray(dones[t], dtype=np.float32), infos)  # fmt: skip


def test_timeouts_are_not_terminals():
    buffer = make_buffer(10)
    add_rows(buffer, [[1], [1], [1]], [[0], [1], [1]], timeouts=[[0], [1], [0]])
    np.testing.assert_array_equal(buffer.terminals[:3, 0], [0, 0, 1])
    samples = buffer.get_samples_at(np.arange(3))
    np.testing.assert_array_equal(samples.dones.numpy().reshape(-1), [0, 0, 1])


# --------------------------------------------------------------------------- score hygiene


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_update_scores_with_non_finite_values_warns_and_uses_floor(bad):
    buffer = make_buffer(20, score_floor=0.05)
    fill_buffer(buffer, 10)
    scores = np.array([0.5, bad, 2.0, bad], dtype=np.float32)
    with pytest.warns(RuntimeWarning, match="non-finite"):
        buffer.update_scores(np.arange(4), scores)
    np.testing.assert_array_equal(buffer.scores[:4], np.array([0.5, 0.05, 2.0, 0.05], dtype=np.float32))
    assert np.all(np.isfinite(buffer.tree.nodes)) and np.all(buffer.tree.nodes >= 0)
    assert np.isfinite(buffer.max_score)
    buffer.sample_weighted(8)  # and sampling still works


def test_negative_scores_are_clipped_to_floor_without_warning():
    buffer = make_buffer(20, score_floor=0.0, epsilon=1e-3)
    fill_buffer(buffer, 10)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        buffer.update_scores(np.arange(3), np.array([-1.0, -0.0, 3.0]))
    assert np.all(buffer.scores[:3] >= 0)
    assert np.all(buffer.tree.leaves >= 0)


def test_rescore_with_non_finite_scores_warns_and_uses_floor():
    buffer = make_buffer(20, score_floor=0.02)
    fill_buffer(buffer, 10)
    buffer._require_tree()  # a tree that exists is rebuilt by the re-score
    indices = buffer.valid_indices()
    scores = np.full(len(indices), 0.7, dtype=np.float32)
    scores[::3] = np.nan
    scores[1] = -np.inf

    with pytest.warns(RuntimeWarning, match="non-finite"):
        buffer.set_all_scores(indices, scores)
    np.testing.assert_array_equal(indices, np.arange(10))
    assert np.all(np.isfinite(buffer.tree.nodes)) and np.all(buffer.tree.nodes >= 0)
    assert np.all(buffer.scores[[0, 1, 3]] == pytest.approx(0.02))
    np.testing.assert_allclose(buffer.tree.leaves[:10], buffer.priority(buffer.scores[:10]))
    assert np.all(buffer.tree.leaves[10:] == 0)


def test_new_transitions_get_the_initial_score():
    """Scores may be assigned lazily, but any read (here a sample) sees the initial score."""
    buffer = make_buffer(20, initial_score="max", alpha=1.0)
    fill_buffer(buffer, 3)
    buffer.update_scores(np.array([0]), np.array([5.0]))
    fill_buffer(buffer, 1)
    buffer.sample_weighted(4)
    assert buffer.scores[3] == 5.0
    assert buffer.tree.leaves[3] == pytest.approx(buffer.priority(5.0))
    probabilities = buffer.sampling_probabilities(np.arange(4), 0.0)
    assert probabilities[3] == pytest.approx(probabilities[0])
    neutral = make_buffer(20, initial_score="neutral")
    fill_buffer(neutral, 2)
    neutral.update_scores(np.array([0]), np.array([5.0]))
    fill_buffer(neutral, 1)
    neutral.sample_weighted(4)
    assert neutral.scores[2] == 0.5


# --------------------------------------------------------------------------- Dict variant

DICT_OBS = spaces.Dict({"vec": spaces.Box(-1, 1, (2,), np.float32), "img": spaces.Box(0, 255, (4, 4, 1), np.uint8)})


def fill_dict_buffer(buffer, n_rows):
    n_envs = buffer.n_envs
    for t in range(n_rows):
        obs = {
            "vec": np.full((n_envs, 2), t / 100, dtype=np.float32),
            "img": np.full((n_envs, 4, 4, 1), t % 255, dtype=np.uint8),
        }
        next_obs = {"vec": obs["vec"] + 0.001, "img": obs["img"] + 1}
        dones = np.array([(t + 1) % 4 == 0] * n_envs, dtype=np.float32)
        buffer.add(obs, next_obs, np.full((n_envs, 1), t % 4), np.ones(n_envs), dones, [{}] * n_envs)


@pytest.mark.parametrize("n_steps", [1, 3])
def test_dict_variant_samples_dict_observations(n_steps):
    buffer = ComplementaryDictReplayBuffer(20, DICT_OBS, ACT, device="cpu", n_envs=2, n_steps=n_steps, gamma=0.9)
    fill_dict_buffer(buffer, 14)
    buffer.update_scores(np.arange(20), np.linspace(0.1, 1, 20))
    batch = buffer.sample_weighted(8)
    assert isinstance(batch.samples, DictReplayBufferSamples)
    assert set(batch.samples.observations) == {"vec", "img"}
    assert batch.samples.observations["img"].shape == (8, 4, 4, 1)
    rows, envs = np.divmod(batch.indices, 2)
    np.testing.assert_array_equal(batch.samples.observations["vec"].numpy(), buffer.observations["vec"][rows, envs])
    np.testing.assert_array_equal(batch.samples.actions.numpy(), buffer.actions[rows, envs])
    if n_steps == 1:
        np.testing.assert_array_equal(
            batch.samples.next_observations["img"].numpy(), buffer.next_observations["img"][rows, envs]
        )
    else:
        assert batch.samples.discounts is not None
    assert buffer.ratio_inputs(batch.indices).shape == (8, buffer.ratio_input_dim)


def test_dict_variant_rejects_flat_space_and_optimize_memory():
    with pytest.raises(ValueError, match="Dict"):
        ComplementaryDictReplayBuffer(10, OBS, ACT, device="cpu")
    with pytest.raises(ValueError, match="optimize_memory_usage"):
        ComplementaryDictReplayBuffer(
            10, DICT_OBS, ACT, device="cpu", optimize_memory_usage=True, handle_timeout_termination=False
        )


def test_unsupported_action_space_of_the_extractor_inputs_names_the_space():
    with pytest.raises(ValueError, match="Tuple"):
        ComplementaryReplayBuffer(10, OBS, spaces.Tuple((spaces.Discrete(2), spaces.Discrete(3))), device="cpu")


def test_ratio_inputs_of_a_flat_observation_and_of_an_image():
    """Flat: observation, next - observation, one-hot action, reward, terminal; an image keeps the last three only."""
    flat = ComplementaryReplayBuffer(10, OBS, ACT, device="cpu")
    fill_buffer(flat, 4)
    inputs = flat.ratio_inputs(np.arange(4))
    obs_dim, n_actions = OBS.shape[0], ACT.n
    assert inputs.shape == (4, 2 * obs_dim + n_actions + 2) == (4, flat.ratio_input_dim)
    np.testing.assert_array_equal(inputs[:, :obs_dim], flat.observations[:4, 0])
    np.testing.assert_array_equal(
        inputs[:, obs_dim : 2 * obs_dim], flat.next_observations[:4, 0] - flat.observations[:4, 0]
    )
    np.testing.assert_array_equal(inputs[:, 2 * obs_dim + n_actions], flat.rewards[:4, 0])
    image = ComplementaryReplayBuffer(10, spaces.Box(0, 255, (8, 8, 1), np.uint8), ACT, device="cpu")
    assert image.ratio_input_dim == n_actions + 2


def test_memory_overhead_at_1m_transitions_matches_the_documented_figure():
    """
    docs/performance.md quotes the extra bytes per transition with the sum tree; a 1M-capacity
    buffer whose draws built its tree stays within 10% of it. Without a tree the overhead is the
    scores, terminal flags and task ids alone: 12 bytes.
    """
    text = (Path(__file__).parents[1] / "docs" / "performance.md").read_text()
    documented = float(re.search(r"\*\*([\d.]+) bytes\*\*, whatever the observation", text).group(1))
    space = spaces.Box(-1, 1, (8,), np.float32)
    buffer = ComplementaryReplayBuffer(1_000_000, space, spaces.Discrete(4), device="cpu")
    assert buffer.overhead_bytes() == 1_000_000 * (4 + 4 + 4)  # no tree until a draw reads it
    buffer._require_tree()
    assert buffer.overhead_bytes() / 1_000_000 == pytest.approx(documented, rel=0.10)
    assert buffer.overhead_bytes() == 1_000_000 * 12 + buffer.tree.nbytes
