"""
Property-based: random knob values and random sequences of add / sample / update / re-score /
tree build / save / load / evict. The sum tree is built lazily (by a draw or an update), so some
sequences never have one: the queries must agree with the stored scores either way.
"""

import pickle
import warnings

import numpy as np
from gymnasium import spaces
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from sb3_complementary import ComplementaryReplayBuffer

OBS = spaces.Box(-5, 5, shape=(2,), dtype=np.float32)


class BufferMachine(RuleBasedStateMachine):
    """A small buffer driven by hypothesis; the invariants hold after every step."""

    buffer: ComplementaryReplayBuffer

    @initialize(
        n_envs=st.integers(1, 3),
        rows=st.integers(2, 12),
        alpha=st.floats(0.0, 2.0),
        uniform_fraction=st.floats(0.0, 1.0),
        epsilon=st.floats(1e-6, 1.0),
        initial_score=st.sampled_from(["max", "neutral"]),
        seed=st.integers(0, 2**16),
    )
    def build(self, n_envs, rows, alpha, uniform_fraction, epsilon, initial_score, seed):
        self.buffer = ComplementaryReplayBuffer(
            rows * n_envs,
            OBS,
            spaces.Discrete(3),
            device="cpu",
            n_envs=n_envs,
            alpha=alpha,
            uniform_fraction=uniform_fraction,
            epsilon=epsilon,
            initial_score=initial_score,
        )
        self.rng = np.random.default_rng(seed)
        np.random.seed(seed)
        self.added = 0  # rows added in total

    @rule(done=st.booleans(), reward=st.floats(-100, 100))
    def add(self, done, reward):
        n = self.buffer.n_envs
        obs = self.rng.normal(size=(n, 2)).astype(np.float32)
        dones = np.full(n, done)
        infos = [{"TimeLimit.truncated": bool(done and self.rng.random() < 0.5)} for _ in range(n)]
        self.buffer.add(obs, obs + 1, self.rng.integers(0, 3, size=(n, 1)), np.full(n, reward), dones, infos)
        self.added += 1

    @precondition(lambda self: self.buffer.size() > 0)
    @rule(batch_size=st.integers(1, 16))
    def sample(self, batch_size):
        batch = self.buffer.sample_weighted(batch_size)
        stored = set(self.buffer.valid_indices().tolist())
        assert set(batch.indices.tolist()) <= stored, "a sampled index is not a stored transition"
        assert np.all(np.isfinite(batch.raw_weights)) and np.all(batch.raw_weights > 0)
        assert batch.samples.observations.shape == (batch_size, 2)

    @precondition(lambda self: self.buffer.size() > 0)
    @rule(data=st.data())
    def update(self, data):
        valid = self.buffer.valid_indices()
        k = data.draw(st.integers(1, len(valid)))
        scores = data.draw(st.lists(st.floats(allow_nan=True, allow_infinity=True, width=32), min_size=k, max_size=k))
        indices = self.rng.choice(valid, size=k, replace=False)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # non-finite scores fall back, with a warning
            self.buffer.update_scores(indices, np.asarray(scores))

    @precondition(lambda self: self.buffer.size() > 0)
    @rule()
    def refresh(self):
        indices = self.buffer.valid_indices()  # what the model's re-score writes
        self.buffer.set_all_scores(indices, self.rng.random(len(indices)))

    @rule()
    def build_tree(self):
        """What the first weighted draw or score update does: build the tree from the stored scores."""
        self.buffer._require_tree()

    @rule()
    def save_and_load(self):
        self.buffer = pickle.loads(pickle.dumps(self.buffer))

    @invariant()
    def the_queries_see_the_stored_scores_and_build_no_tree(self):
        """With or without a tree, what the next draw will see is each valid transition's priority by its score."""
        if not hasattr(self, "buffer"):
            return
        buffer = self.buffer
        had_tree = buffer.tree is not None
        leaves, total = buffer._leaves()
        expected = buffer._all_priorities(buffer.valid_indices())
        np.testing.assert_allclose(leaves[: len(expected)], expected, rtol=1e-6, atol=1e-12)
        assert np.isclose(total, expected.sum(), rtol=1e-6)
        assert 0 < buffer.ess_fraction() <= 1 + 1e-9
        assert (buffer.tree is not None) == had_tree, "a query built (or dropped) the tree"

    @invariant()
    def tree_is_the_sum_of_its_leaves(self):
        if not hasattr(self, "buffer") or self.buffer.tree is None:
            return  # no draw or update has read it yet
        tree = self.buffer.tree
        nodes = tree.nodes
        assert np.all(np.isfinite(nodes)) and np.all(nodes >= 0), "the tree holds a NaN or a negative value"
        for level in range(tree.depth):  # every parent is the sum of its two children
            start = 1 << level
            parents = nodes[start : 2 * start]
            children = nodes[2 * start : 4 * start].reshape(-1, 2).sum(axis=1)
            np.testing.assert_allclose(parents, children, rtol=1e-9, atol=1e-9)

    @invariant()
    def size_is_what_was_added(self):
        if hasattr(self, "buffer"):
            assert self.buffer.size() == min(self.added, self.buffer.buffer_size)


BufferMachine.TestCase.settings = settings(
    max_examples=60, stateful_step_count=30, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
TestBufferMachine = BufferMachine.TestCase
