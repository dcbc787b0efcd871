"""
Actor-critic family (SAC, TD3, DDPG, TQC, CrossQ): the IS weights reach the critic loss only, and Box
actions enter the density-ratio extractor's inputs scaled to [-1, 1].
"""

import gymnasium as gym
import numpy as np
import pytest
import torch as th
from torch.nn import functional as F

from sb3_complementary.common.losses import weighted_mse
from tests.algorithms import ACTOR_CRITIC, STEPS, build, train_with_weights

BATCH = 16


# --------------------------------------------------------------------------- IS weights: critic loss only


@pytest.mark.parametrize("name", ACTOR_CRITIC)
def test_is_weights_reach_the_critic_loss_only(name, monkeypatch):
    rng = np.random.default_rng(0)
    ones = np.ones(BATCH, dtype=np.float32)
    uneven = rng.uniform(0.05, 1.0, BATCH).astype(np.float32)
    critic_ones, actor_ones = train_with_weights(name, ones, monkeypatch)
    critic_uneven, actor_uneven = train_with_weights(name, uneven, monkeypatch)
    critic_zero, actor_zero = train_with_weights(name, np.zeros(BATCH, dtype=np.float32), monkeypatch)

    assert actor_ones, "the actor was never updated"
    # The actor's loss does not see the weights: identical actor gradients whatever the weights.
    for got in (actor_uneven, actor_zero):
        assert len(got) == len(actor_ones)
        for step_expected, step_got in zip(actor_ones, got, strict=True):
            assert all(th.equal(a, b) for a, b in zip(step_expected, step_got, strict=True))
    # The critic's does: other weights, other gradients; zero weights, zero gradients.
    assert any(not th.equal(a, b) for a, b in zip(critic_ones[0], critic_uneven[0], strict=True))
    assert any(g.abs().sum() > 0 for g in critic_ones[0])
    assert all(float(g.abs().sum()) == 0.0 for step in critic_zero for g in step)


def test_weighted_mse_is_mse_with_unit_weights_and_weights_each_sample():
    gen = th.Generator().manual_seed(0)
    current = th.randn(9, 1, generator=gen, requires_grad=True)
    target = th.randn(9, 1, generator=gen)
    ours = weighted_mse(current, target, th.ones(9, 1))
    parent = F.mse_loss(current, target)
    assert th.equal(ours, parent)
    assert th.equal(th.autograd.grad(ours, current)[0], th.autograd.grad(parent, current)[0])
    weights = th.rand(9, 1, generator=gen)
    expected = th.stack([w * F.mse_loss(c, t) for w, c, t in zip(weights, current, target, strict=True)]).mean()
    th.testing.assert_close(weighted_mse(current, target, weights), expected)


# --------------------------------------------------------------------------- Box actions in the extractor's inputs


class RecordActions(gym.Wrapper):
    def __init__(self, env):
        super().__init__(env)
        self.actions = []

    def step(self, action):
        self.actions.append(np.array(action, dtype=np.float32))
        return super().step(action)


@pytest.mark.parametrize("name", ["ComplementarySAC", "ComplementaryTD3"])
def test_box_actions_enter_the_ratio_inputs_scaled_to_unit_box(name):
    env = RecordActions(gym.make("Pendulum-v1"))  # actions in [-2, 2]
    model = build(name, env=env, seed=0)
    model.learn(STEPS)
    buffer = model.replay_buffer
    n = buffer.size()
    env_actions = np.stack(env.actions)[:n]
    assert np.abs(env_actions).max() > 1.0, "the test needs actions outside [-1, 1] at the env"
    # ratio_inputs columns: observation, next_observation - observation, action, reward, terminal.
    obs_dim = buffer.obs_shape[0]
    inputs = buffer.ratio_inputs(np.arange(n))
    assert inputs.shape == (n, 2 * obs_dim + 1 + 2) == (n, buffer.ratio_input_dim)
    block = inputs[:, 2 * obs_dim : 2 * obs_dim + 1]
    np.testing.assert_array_equal(block, buffer.actions[:n, 0])  # the buffer already holds scaled actions
    assert np.abs(block).max() <= 1.0
    np.testing.assert_allclose(block, env_actions / 2.0, rtol=1e-6, atol=1e-6)  # scaled = env action / 2
