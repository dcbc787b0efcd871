"""
Distributional family (QR-DQN, TQC): the per-sample quantile Huber loss is weighted (and is sb3-contrib's
loss bit for bit with unit weights), and the influence at a quantile head has a closed form, checked
against autograd through sb3-contrib's own loss (docs/algorithms/distributional.md has the derivation).
"""

import numpy as np
import pytest
import torch as th
from sb3_contrib.common.utils import quantile_huber_loss

from sb3_complementary.common.contribution import last_layer_influence
from sb3_complementary.common.last_layer import capture_input
from sb3_complementary.common.losses import (
    quantile_huber_output_grad,
    quantile_td_abs,
    weighted_quantile_huber_loss,
)
from sb3_complementary.common.side_effects import side_effect_free
from tests.algorithms import STEPS, brute_force_influence, build, head_of, train_with_weights

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


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_quantile_output_gradient_equals_autograd_qrdqn(seed):
    """g_ik = -(1/N') Σ_j |τ_k - 1{δ_kj<0}| clip(δ_kj, -1, 1) is ∂ℓ_i/∂θ_ik of sb3-contrib's per-sample loss."""
    current, target = quantile_problem(seed)
    expected = th.stack(
        [
            th.autograd.grad(quantile_huber_loss(current[i : i + 1], target[i : i + 1]), current)[0][i]
            for i in range(len(current))
        ]
    )
    got = quantile_huber_output_grad(current.detach(), target) / target.shape[-1]
    th.testing.assert_close(got, expected, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("seed", [0, 1])
def test_quantile_output_gradient_equals_autograd_tqc_first_critic(seed):
    """For TQC the per-sample loss averages over critics, quantiles and target atoms: scale 1/(C K N')."""
    current, target = quantile_problem(seed, n_critics=3)
    n_critics, n_quantiles, n_target = current.shape[1], current.shape[2], target.shape[-1]
    expected = th.stack(
        [
            th.autograd.grad(
                quantile_huber_loss(current[i : i + 1], target[i : i + 1], sum_over_quantiles=False), current
            )[0][i, 0]
            for i in range(len(current))
        ]
    )
    got = quantile_huber_output_grad(current[:, 0].detach(), target.squeeze(1)) / (n_critics * n_quantiles * n_target)
    th.testing.assert_close(got, expected, rtol=1e-6, atol=1e-8)


def test_quantile_td_is_the_implied_q_value_error():
    current = th.tensor([[1.0, 2.0, 3.0], [0.0, 0.0, 0.0]])
    target = th.tensor([[4.0, 4.0], [-1.0, -3.0]])
    th.testing.assert_close(quantile_td_abs(current, target), th.tensor([2.0, 2.0]))


# --------------------------------------------------------------------------- QR-DQN on the live network


@pytest.fixture(scope="module")
def learned_qrdqn():
    model = build("ComplementaryQRDQN", seed=1)
    model.learn(STEPS)
    return model


def test_qrdqn_influence_equals_brute_force_on_the_live_head(learned_qrdqn):
    """The quantile head has n_quantiles × n_actions outputs: the closed form's (k, a) layout matches its rows."""
    model = learned_qrdqn
    buffer = model.replay_buffer
    batch = buffer.get_samples_at(np.arange(0, 120, 10))
    probe = buffer.get_samples_at(buffer.recent_indices(model.probe_size))
    with side_effect_free(model.policy, model.device):
        target, probe_target = model._td_target(batch), model._td_target(probe)
        out_grad, penultimate = model._probe_gradients(batch, target)
        got = last_layer_influence(out_grad, penultimate, *model._probe_gradients(probe, probe_target))
    assert out_grad.shape == (12, model.n_quantiles * model.action_space.n)
    expected = brute_force_influence(model, batch, target, probe, probe_target)
    assert expected.abs().max() > 0
    th.testing.assert_close(got, expected, rtol=1e-4, atol=1e-7)


def test_qrdqn_output_gradient_is_the_gradient_wrt_the_head_outputs(learned_qrdqn):
    """g_i, laid out as the head's outputs (``view(-1, n_quantiles, n_actions)``), by autograd on each sample."""
    model = learned_qrdqn
    samples = model.replay_buffer.get_samples_at(np.arange(0, 60, 5))
    with side_effect_free(model.policy, model.device):
        target = model._td_target(samples)
        out_grad, penultimate = model._probe_gradients(samples, target)
    head = head_of(model)
    n_actions = int(model.action_space.n)
    for i in range(len(target)):
        outputs = head(penultimate[i : i + 1]).detach().requires_grad_(True)
        index = samples.actions[i : i + 1, None].long().expand(1, model.n_quantiles, 1)
        current = th.gather(outputs.view(1, model.n_quantiles, n_actions), dim=2, index=index).squeeze(dim=2)
        (expected,) = th.autograd.grad(quantile_huber_loss(current, target[i : i + 1]), outputs)
        th.testing.assert_close(out_grad[i], expected[0], rtol=1e-5, atol=1e-7)


def test_qrdqn_influence_of_different_actions_is_zero(learned_qrdqn):
    """Samples whose actions differ share no head rows: their gradient dot product is zero, as in DQN."""
    model = learned_qrdqn
    buffer = model.replay_buffer
    samples = buffer.get_samples_at(np.arange(40))
    with side_effect_free(model.policy, model.device):
        out_grad, _ = model._probe_gradients(samples, model._td_target(samples))
    actions = samples.actions.reshape(-1)
    different = actions[:, None] != actions[None, :]
    assert different.any()
    assert th.all((out_grad @ out_grad.T)[different] == 0)


def test_qrdqn_training_step_measures_the_trained_rows(monkeypatch):
    model = build("ComplementaryQRDQN", seed=2, label_interval=1, contribution="influence")
    model.learn(100)
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
        with side_effect_free(model.policy, model.device):
            expected_grad, expected_phi = model._probe_gradients(samples, seen["target"])
            with capture_input(head_of(model)) as phi:
                model.quantile_net(samples.observations)
        th.testing.assert_close(penultimate, phi.get())
        th.testing.assert_close(penultimate, expected_phi)
        th.testing.assert_close(out_grad, expected_grad)
        seen["checked"] = seen.get("checked", 0) + 1
        return influence(out_grad, penultimate)

    monkeypatch.setattr(model.replay_buffer, "sample_weighted", spy_sample)
    monkeypatch.setattr(model, "_td_target", spy_target)
    monkeypatch.setattr(model, "_influence", spy_influence)
    model.train(gradient_steps=2, batch_size=BATCH)
    assert seen["checked"] == 2


@pytest.mark.parametrize("name", QR_DQN)
def test_is_weights_reach_the_quantile_loss(name, monkeypatch):
    ones, _ = train_with_weights(name, np.ones(BATCH, dtype=np.float32), monkeypatch, gradient_steps=1)
    uneven_weights = np.random.default_rng(0).uniform(0.05, 1.0, BATCH).astype(np.float32)
    uneven, _ = train_with_weights(name, uneven_weights, monkeypatch, gradient_steps=1)
    zero, _ = train_with_weights(name, np.zeros(BATCH, dtype=np.float32), monkeypatch, gradient_steps=1)
    assert any(g.abs().sum() > 0 for g in ones[0])
    assert any(not th.equal(a, b) for a, b in zip(ones[0], uneven[0], strict=True))
    assert all(float(g.abs().sum()) == 0.0 for g in zero[0])
