"""Rows added since the last re-score: every reader of the scores sees their initial score, never a stale one."""

import numpy as np
from gymnasium import spaces

from sb3_complementary import ComplementaryDQN, ComplementaryReplayBuffer, PrioritizedDQN
from tests.conftest import DENSITY_RATIO, TINY_DQN, fill_buffer, tiny_extractor

OBS = spaces.Box(-np.inf, np.inf, (3,), np.float32)
ACT = spaces.Discrete(4)


def test_a_new_row_reads_its_initial_score_before_any_flush():
    buffer = ComplementaryReplayBuffer(16, OBS, ACT, device="cpu", initial_score="neutral")
    buffer.neutral_score = 1.0
    fill_buffer(buffer, 4)
    buffer.set_all_scores(buffer.valid_indices(), np.full(4, 7.0))
    fill_buffer(buffer, 3, seed=1)  # rows 4-6: not flushed yet
    np.testing.assert_array_equal(buffer.scores[4:7], 1.0)
    np.testing.assert_array_equal(buffer.scores[:4], 7.0)


def test_a_recycled_row_does_not_inherit_the_evicted_rows_score():
    """Once the buffer wraps, an overwritten row gets the initial score, not the weight of the row it replaced."""
    buffer = ComplementaryReplayBuffer(8, OBS, ACT, device="cpu", initial_score="neutral")
    buffer.neutral_score = 1.0
    fill_buffer(buffer, 8)
    buffer.set_all_scores(buffer.valid_indices(), np.full(8, 10.0))
    fill_buffer(buffer, 2, seed=1)  # overwrites rows 0 and 1
    np.testing.assert_array_equal(buffer.scores[:2], 1.0)
    np.testing.assert_array_equal(buffer.scores[2:], 10.0)
    leaves, _ = buffer._leaves()  # what the next tree draw sees agrees with the scores
    np.testing.assert_allclose(leaves[:2], buffer.priority(1.0))


def test_the_density_ratio_pool_scores_fresh_candidates_at_the_neutral_ratio():
    """
    The density ratio's draw (ratio x fresh |TD| on a pool): a transition added since the last
    re-score counts at the mean ratio, 1, so its score is its fresh |TD|, not the floor.
    """
    kwargs = {**TINY_DQN, **DENSITY_RATIO, **tiny_extractor(fast_memory=50), "buffer_size": 300}
    model = ComplementaryDQN("MlpPolicy", "CartPole-v1", seed=0, **kwargs)
    model.learn(650)  # wrapped twice; the last re-score was at step 600
    buffer = model.replay_buffer
    assert buffer.tree is None  # a pool's draw reads the scores, never a tree
    pending = buffer.row_indices((model.replay_buffer.pos - 1 - np.arange(50)) % buffer.buffer_size)  # added since
    assert len(pending) > 0
    np.testing.assert_array_equal(buffer.scores[pending], 1.0)
    # Through the model's draw: a pool of the pending rows, each with |TD| 0.5, scores ratio 1 x 0.5.
    seen = {}
    select = buffer.select_from_candidates

    def spy(candidates, samples, scores, batch_size, **kwargs):
        seen["candidates"], seen["scores"] = candidates, scores
        return select(candidates, samples, scores, batch_size, **kwargs)

    model.candidate_pool = 1
    buffer.uniform_indices = lambda n: pending.copy()
    model._current_td_abs = lambda samples: np.full(len(samples.rewards), 0.5)
    buffer.select_from_candidates = spy
    model._draw_batch(len(pending))
    np.testing.assert_array_equal(seen["candidates"], pending)
    np.testing.assert_allclose(seen["scores"], 0.5)


def test_a_buffer_loaded_with_a_changed_priority_map_keeps_the_pending_rows_initial_score(tmp_path):
    """
    ``load_replay_buffer`` into a model whose ``alpha`` differs rebuilds the tree from the scores; the
    rows not yet flushed when the buffer was pickled (a pickle written before c0e532d holds 0 for
    them) get their initial score, not 0, which under PER would never replay them.
    """
    model = PrioritizedDQN("MlpPolicy", "CartPole-v1", seed=0, **TINY_DQN)
    model.learn(300)
    buffer = model.replay_buffer
    for _ in range(3):  # rows added after the last draw: not flushed into the tree yet
        obs = model.observation_space.sample()[None]
        buffer.add(obs, obs, np.array([[0]]), np.ones(1), np.zeros(1), [{}])
    pending = buffer.row_indices(np.unique(buffer._unscored_rows))
    assert len(pending) > 0
    buffer.scores[pending] = 0.0  # as a pickle from before c0e532d holds them
    model.save_replay_buffer(tmp_path / "buffer")
    loaded = PrioritizedDQN("MlpPolicy", "CartPole-v1", seed=0, **{**TINY_DQN, "alpha": 0.3})
    loaded.load_replay_buffer(tmp_path / "buffer")
    replay = loaded.replay_buffer
    np.testing.assert_allclose(replay.scores[pending], replay.max_score)
    np.testing.assert_allclose(replay.tree.leaves[pending], replay.priority(replay.max_score))
