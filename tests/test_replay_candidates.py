"""The non-learned replay candidate: LaBER-style fresh |TD| on a pool (LaBER itself: test_draw_time_selection)."""

import gymnasium as gym
import numpy as np
import pytest

from sb3_complementary import ComplementaryDQN
from tests.conftest import TINY_DQN, TINY_EXTRACTOR


def pool_model(**overrides):
    return ComplementaryDQN(
        "MlpPolicy",
        gym.make("CartPole-v1"),
        seed=0,
        **{**TINY_DQN, **TINY_EXTRACTOR, "candidate_pool": 4, "uniform_fraction": 0.0, **overrides},
    )


# ------------------------------------------------------------------ fresh |TD| (LaBER, LAP floor)
def test_fresh_td_selects_by_the_td_measured_now_without_is_weights(monkeypatch):
    model = pool_model(contribution="fresh_td", score_floor=1.0, alpha=1.0)
    model.learn(300)
    model._begin_weighted_train()
    pool = 4 * 64
    td = np.ones(pool)
    td[:16] = 50.0  # 16 candidates far above LAP's floor of 1
    monkeypatch.setattr(model, "_current_td_abs", lambda samples: td[: len(samples.rewards)])
    np.random.seed(0)
    high = set(model.replay_buffer.uniform_indices(pool)[:16].tolist())  # the pool the next draw takes
    np.random.seed(0)
    batch = model._draw_batch(64)
    # A candidate's priority is max(|TD|, 1): the 16 high ones hold 800 of the pool's 1,040 units.
    share = np.mean([i in high for i in batch.indices])
    assert share > 0.6
    np.testing.assert_allclose(batch.weights.numpy(), 1.0)  # beta 0: no IS undo
    assert model.extractor is None  # nothing to fit
    with pytest.raises(ValueError, match="no extractor"):
        model.fit_extractor()


def test_fresh_td_needs_a_candidate_pool():
    with pytest.raises(ValueError, match=r"contribution='fresh_td' measures \|TD\| on a candidate pool"):
        pool_model(contribution="fresh_td", candidate_pool=0)
