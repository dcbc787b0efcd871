"""The non-learned replay candidates: LaBER-style fresh |TD| on a candidate pool, and ReLo's reducible loss."""

import gymnasium as gym
import numpy as np
import pytest
import torch as th
from torch.nn import functional as F

from sb3_complementary import ComplementaryDQN, PrioritizedDQN, PrioritizedSAC
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
    assert np.isnan(model.fit_extractor())  # nothing to fit


def test_fresh_td_needs_a_candidate_pool():
    with pytest.raises(ValueError, match=r"contribution='fresh_td' measures \|TD\| on a candidate pool"):
        pool_model(contribution="fresh_td", candidate_pool=0)


# ------------------------------------------------------------------ ReLo
def test_relo_priorities_are_the_reducible_loss_at_draw_time():
    model = PrioritizedDQN("MlpPolicy", gym.make("CartPole-v1"), seed=0, priority="relo", **TINY_DQN)
    model.learn(300)
    model._begin_weighted_train()
    batch = model._draw_batch(32)
    data = batch.samples
    with th.no_grad():
        target = model._td_target(data)
        online = th.gather(model.q_net(data.observations), 1, data.actions.long())
        frozen = th.gather(model.q_net_target(data.observations), 1, data.actions.long())
        expected = F.smooth_l1_loss(online, target, reduction="none") - F.smooth_l1_loss(
            frozen, target, reduction="none"
        )
    np.testing.assert_allclose(batch.fresh_scores, expected.clamp_min(0).numpy().reshape(-1), rtol=1e-5, atol=1e-7)
    assert (batch.fresh_scores > 0).any()
    model._replay_feedback(batch, np.full(32, 123.0), None)  # the tree takes ReLo's score, not |TD|
    np.testing.assert_allclose(
        model.replay_buffer.scores[batch.indices], np.maximum(batch.fresh_scores, model.replay_buffer.score_floor)
    )


def test_relo_is_refused_where_it_cannot_be_measured():
    with pytest.raises(ValueError, match="priority='relo': PrioritizedSAC cannot measure the reducible loss yet"):
        PrioritizedSAC("MlpPolicy", "Pendulum-v1", priority="relo", device="cpu")
    with pytest.raises(ValueError, match=r"priority must be one of \['td', 'relo'\], got 'rho'"):
        PrioritizedSAC("MlpPolicy", "Pendulum-v1", priority="rho", device="cpu")
