"""
Distributional family (QR-DQN, TQC): the per-sample quantile Huber loss is weighted (and is sb3-contrib's
loss bit for bit with unit weights), the ``|TD|`` of a quantile critic is the error of the Q-value it
implies, and the IS weights reach QR-DQN's quantile loss.
"""

import numpy as np
import pytest
import torch as th
from sb3_contrib.common.utils import quantile_huber_loss

from sb3_complementary.common.losses import quantile_td_abs, weighted_quantile_huber_loss
from tests.algorithms import train_with_weights

QR_DQN = ["ComplementaryQRDQN", "PrioritizedQRDQN"]
BATCH = 16


def quantile_problem(seed, batch=6, n_critics=None, n_quantiles=5, n_target=7):
    """Current and target quantiles whose pairwise differences fall on both sides of the Huber threshold."""
    gen = th.Generator().manual_seed(seed)
    shape = (batch, n_quantiles) if n_critics is None else (batch, n_critics, n_quantiles)
    current = th.randn(shape, generator=gen, requires_grad=True)
    target = 2.0 * th.randn(batch, n_target, generator=gen)
    if n_critics is not None:
        target = target.unsqueeze(1)
    delta = (target.unsqueeze(-2) - current.unsqueeze(-1)).abs()
    assert (delta < 1).any() and (delta > 1).any()
    return current, target


@pytest.mark.parametrize("n_critics", [None, 3], ids=["qrdqn", "tqc"])
def test_weighted_quantile_loss_is_sb3_contrib_loss_with_unit_weights(n_critics):
    current, target = quantile_problem(0, n_critics=n_critics)
    sum_over = n_critics is None  # QR-DQN sums over the current quantiles, TQC averages everything
    parent = quantile_huber_loss(current, target, sum_over_quantiles=sum_over)
    ours = weighted_quantile_huber_loss(current, target, th.ones(len(current), 1), sum_over_quantiles=sum_over)
    assert th.equal(ours, parent)
    assert th.equal(th.autograd.grad(ours, current)[0], th.autograd.grad(parent, current)[0])


@pytest.mark.parametrize("n_critics", [None, 3], ids=["qrdqn", "tqc"])
def test_weighted_quantile_loss_weights_each_samples_own_loss(n_critics):
    current, target = quantile_problem(1, n_critics=n_critics)
    sum_over = n_critics is None
    weights = th.rand(len(current), 1, generator=th.Generator().manual_seed(2))
    per_sample = th.stack(
        [
            quantile_huber_loss(current[i : i + 1], target[i : i + 1], sum_over_quantiles=sum_over)
            for i in range(len(current))
        ]
    )
    expected = (weights.reshape(-1) * per_sample).mean()
    th.testing.assert_close(weighted_quantile_huber_loss(current, target, weights, sum_over), expected)


def test_quantile_td_is_the_implied_q_value_error():
    current = th.tensor([[1.0, 2.0, 3.0], [0.0, 0.0, 0.0]])
    target = th.tensor([[4.0, 4.0], [-1.0, -3.0]])
    th.testing.assert_close(quantile_td_abs(current, target), th.tensor([2.0, 2.0]))


@pytest.mark.parametrize("name", QR_DQN)
def test_is_weights_reach_the_quantile_loss(name, monkeypatch):
    ones, _ = train_with_weights(name, np.ones(BATCH, dtype=np.float32), monkeypatch, gradient_steps=1)
    uneven_weights = np.random.default_rng(0).uniform(0.05, 1.0, BATCH).astype(np.float32)
    uneven, _ = train_with_weights(name, uneven_weights, monkeypatch, gradient_steps=1)
    zero, _ = train_with_weights(name, np.zeros(BATCH, dtype=np.float32), monkeypatch, gradient_steps=1)
    assert any(g.abs().sum() > 0 for g in ones[0])
    assert any(not th.equal(a, b) for a, b in zip(ones[0], uneven[0], strict=True))
    assert all(float(g.abs().sum()) == 0.0 for g in zero[0])
