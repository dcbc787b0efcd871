"""
Actor-critic family (SAC, TD3, DDPG, TQC, CrossQ): the IS weights reach the critic loss only, Box actions
enter the extractor features scaled to [-1, 1], and the influence is measured at the first critic's last
linear layer: closed form against per-sample autograd through the parent's own loss.
"""

import gymnasium as gym
import numpy as np
import pytest
import torch as th
from torch.nn import functional as F

from sb3_complementary.common.contribution import last_layer_influence
from sb3_complementary.common.features import SCALAR_FEATURES
from sb3_complementary.common.last_layer import capture_input
from sb3_complementary.common.losses import weighted_mse
from sb3_complementary.common.side_effects import side_effect_free
from sb3_complementary.sac.weighted_sac import WeightedSAC
from sb3_complementary.td3.weighted_td3 import WeightedTD3
from tests.algorithms import (
    ACTOR_CRITIC,
    SPECS,
    STEPS,
    brute_force_influence,
    build,
    head_of,
    train_with_weights,
)

COMPLEMENTARY_AC = [name for name in ACTOR_CRITIC if SPECS[name].complementary]
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


# --------------------------------------------------------------------------- Box actions in the features


class RecordActions(gym.Wrapper):
    def __init__(self, env):
        super().__init__(env)
        self.actions = []

    def step(self, action):
        self.actions.append(np.array(action, dtype=np.float32))
        return super().step(action)


@pytest.mark.parametrize("name", ["ComplementarySAC", "ComplementaryTD3"])
def test_box_actions_enter_the_features_scaled_to_unit_box(name):
    env = RecordActions(gym.make("Pendulum-v1"))  # actions in [-2, 2]
    model = build(name, env=env, seed=0)
    model.learn(STEPS)
    buffer = model.replay_buffer
    n = buffer.size()
    env_actions = np.stack(env.actions)[:n]
    assert np.abs(env_actions).max() > 1.0, "the test needs actions outside [-1, 1] at the env"
    block = buffer.feature_matrix(np.arange(n))[:, len(SCALAR_FEATURES) :]
    np.testing.assert_array_equal(block, buffer.actions[:n, 0])  # the buffer already holds scaled actions
    assert np.abs(block).max() <= 1.0
    np.testing.assert_allclose(block, env_actions / 2.0, rtol=1e-6, atol=1e-6)  # scaled = env action / 2


# --------------------------------------------------------------------------- influence at the first critic


@pytest.mark.parametrize("cls, factor", [(WeightedSAC, 0.5), (WeightedTD3, 1.0)], ids=["sac", "td3"])
def test_critic_output_gradient_is_the_closed_form(cls, factor):
    """d/dQ_1 of each sample's critic loss factor * Σ_c (Q_c - y)², by autograd, against the closed form."""
    gen = th.Generator().manual_seed(1)
    q_values = [th.randn(7, 1, generator=gen, requires_grad=True) for _ in range(2)]
    target = th.randn(7, 1, generator=gen)

    def first_critic_grad(i):
        loss = factor * sum(F.mse_loss(q[i : i + 1], target[i : i + 1]) for q in q_values)
        return th.autograd.grad(loss, q_values[0])[0][i]

    expected = th.stack([first_critic_grad(i) for i in range(7)])
    th.testing.assert_close(cls._critic_output_grad(q_values[0].detach(), target), expected)


@pytest.fixture(scope="module", params=COMPLEMENTARY_AC)
def learned(request):
    model = build(request.param, seed=1)
    model.learn(STEPS)
    return request.param, model


def test_influence_equals_brute_force_on_the_live_critic(learned):
    """The closed form on the first critic's head equals per-sample autograd through the parent's critic loss."""
    _, model = learned
    buffer = model.replay_buffer
    batch = buffer.get_samples_at(np.arange(0, 120, 10))
    probe = buffer.get_samples_at(buffer.recent_indices(model.probe_size))
    with side_effect_free(model.policy, model.device):
        target, probe_target = model._td_target(batch), model._td_target(probe)
        got = last_layer_influence(*model._probe_gradients(batch, target), *model._probe_gradients(probe, probe_target))
    expected = brute_force_influence(model, batch, target, probe, probe_target)
    assert got.shape == (12,) and expected.abs().max() > 0
    th.testing.assert_close(got, expected, rtol=1e-4, atol=1e-7)


@pytest.mark.parametrize("name", COMPLEMENTARY_AC)
def test_training_step_measures_the_trained_rows_at_the_first_critic(name, monkeypatch):
    """Inside train(), the influence gets the batch's own output gradients and penultimate features."""
    # CrossQ without batch norm, so that the (s, a) half of its joint pass can be recomputed alone.
    overrides = {"policy_kwargs": {"net_arch": [16], "batch_norm": False}} if name == "ComplementaryCrossQ" else {}
    model = build(name, seed=2, label_interval=1, contribution="influence", **overrides)
    model.learn(150)
    seen = {}
    sample, td_target, influence = model.replay_buffer.sample_weighted, model._td_target, model._influence

    def spy_sample(*args, **kwargs):
        seen["batch"] = sample(*args, **kwargs)
        return seen["batch"]

    def spy_target(data, *args, **kwargs):
        target = td_target(data, *args, **kwargs)
        if data is seen["batch"].samples:  # not the probe's
            seen["target"] = target
        return target

    def spy_influence(out_grad, penultimate):
        samples = seen["batch"].samples
        with side_effect_free(model.policy, model.device), capture_input(head_of(model)) as phi:
            model.critic(samples.observations, samples.actions)
        assert penultimate.shape == phi.get().shape == (len(samples.rewards), head_of(model).in_features)
        th.testing.assert_close(penultimate, phi.get())
        if name != "ComplementaryCrossQ":  # CrossQ's batch target comes from its joint pass, not _td_target
            with side_effect_free(model.policy, model.device):
                expected_grad, _ = model._probe_gradients(samples, seen["target"])
            th.testing.assert_close(out_grad, expected_grad)
        seen["checked"] = seen.get("checked", 0) + 1
        return influence(out_grad, penultimate)

    monkeypatch.setattr(model.replay_buffer, "sample_weighted", spy_sample)
    monkeypatch.setattr(model, "_td_target", spy_target)
    monkeypatch.setattr(model, "_influence", spy_influence)
    model.train(gradient_steps=2, batch_size=BATCH)
    assert seen["checked"] == 2


@pytest.mark.parametrize(
    ("name", "contribution", "expected"),
    [
        ("ComplementarySAC", "influence", (2, 1)),
        ("ComplementaryTD3", "influence", (2, 1)),
        ("ComplementarySAC", "td", (0, 0)),  # the default signal needs no probe
        ("PrioritizedSAC", None, (0, 0)),
    ],
)
def test_influence_only_on_labelled_steps_and_probe_once_per_call(name, contribution, expected, monkeypatch):
    """label_interval=4: one step in four measures the influence, the probe once per train() call; td needs neither."""
    knobs = {"label_interval": 4, "contribution": contribution} if SPECS[name].complementary else {}
    model = build(name, seed=0, **knobs)
    model.learn(150)
    calls = {"influence": 0, "probe": 0}
    influence, recent_indices = model._influence, model.replay_buffer.recent_indices

    def count(key, fn):
        def wrapped(*args, **kwargs):
            calls[key] += 1
            return fn(*args, **kwargs)

        return wrapped

    monkeypatch.setattr(model, "_influence", count("influence", influence))
    monkeypatch.setattr(model.replay_buffer, "recent_indices", count("probe", recent_indices))  # the probe's gather
    model.train(gradient_steps=8, batch_size=BATCH)
    assert (calls["influence"], calls["probe"]) == expected
