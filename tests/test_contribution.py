"""Contribution signals: the influence closed form against brute force, and the labels of each signal."""

import copy

import numpy as np
import pytest
import torch as th
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import VecNormalize
from torch import nn
from torch.nn import functional as F

from sb3_complementary import ComplementaryDQN
from sb3_complementary.common import weighted_replay_mixin
from sb3_complementary.common.contribution import (
    InfluenceSignal,
    OutcomeSignal,
    TDSignal,
    last_layer_influence,
    make_signal,
)
from sb3_complementary.common.label_store import LabelStore

# --------------------------------------------------------------------------- influence: brute force


def tiny_q_problem(seed=0, batch=7, probe=5, n_obs=4, hidden=6, n_actions=3):
    """features → Linear(H) → ReLU → Linear(A) in float64, with a batch and a probe batch of TD targets."""
    gen = th.Generator().manual_seed(seed)
    net = nn.Sequential(nn.Linear(n_obs, hidden), nn.ReLU(), nn.Linear(hidden, n_actions)).double()
    with th.no_grad():
        for p in net.parameters():
            p.copy_(th.randn(p.shape, generator=gen, dtype=th.float64))

    def make(n):
        obs = th.randn(n, n_obs, generator=gen, dtype=th.float64)
        actions = th.randint(0, n_actions, (n, 1), generator=gen)
        targets = 3 * th.randn(n, 1, generator=gen, dtype=th.float64)  # some |δ| > 1, some < 1: both Huber regimes
        return obs, actions, targets

    return net, make(batch), make(probe)


def huber_losses(net, obs, actions, targets):
    """Per-sample Huber losses ``(n, 1)`` of the taken actions."""
    return F.smooth_l1_loss(th.gather(net(obs), 1, actions), targets, reduction="none")


def last_layer_grad(net, loss):
    """Flattened gradient of a scalar loss w.r.t. the last Linear layer's weight and bias."""
    layer = net[-1]
    grad_w, grad_b = th.autograd.grad(loss, [layer.weight, layer.bias])
    return th.cat([grad_w.reshape(-1), grad_b.reshape(-1)])


def brute_force_influence(net, batch, probe):
    """c_i = ∇_last ℓ_i · ∇_last mean_j ℓ_j(probe), one autograd call per sample."""
    probe_grad = last_layer_grad(net, huber_losses(net, *probe).mean())
    obs, actions, targets = batch
    return th.stack(
        [
            last_layer_grad(net, huber_losses(net, obs[i : i + 1], actions[i : i + 1], targets[i : i + 1]).sum())
            @ probe_grad
            for i in range(len(obs))
        ]
    )


def closed_form_inputs(net, obs, actions, targets):
    """``(n, A)`` output gradients of each sample's own loss and ``(n, H)`` penultimate features."""
    penultimate = net[:-1](obs).detach()
    q_values = net[-1](penultimate).detach().requires_grad_(True)
    loss = F.smooth_l1_loss(th.gather(q_values, 1, actions), targets, reduction="sum")
    (out_grad,) = th.autograd.grad(loss, q_values)
    return out_grad, penultimate


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_last_layer_influence_equals_brute_force(seed):
    net, batch, probe = tiny_q_problem(seed)
    expected = brute_force_influence(net, batch, probe)
    got = last_layer_influence(*closed_form_inputs(net, *batch), *closed_form_inputs(net, *probe))
    assert got.shape == (len(batch[0]),)
    th.testing.assert_close(got, expected, rtol=1e-10, atol=1e-12)
    assert (expected > 0).any() and (expected < 0).any()  # the case exercises both signs


def test_output_gradient_is_clipped_td_on_taken_action():
    """The closed form of docs/algorithms/dqn.md: g_i = clip(δ_i, -1, 1) on the taken action, zero elsewhere."""
    net, (obs, actions, targets), _ = tiny_q_problem(3)
    out_grad, _ = closed_form_inputs(net, obs, actions, targets)
    delta = th.gather(net(obs), 1, actions).detach() - targets
    expected = th.zeros_like(out_grad).scatter_(1, actions, delta.clamp(-1, 1))
    th.testing.assert_close(out_grad, expected)


def test_largest_contribution_lowers_probe_loss_most():
    """c_i is the first-order drop of the probe loss after a small last-layer step on sample i."""
    net, batch, probe = tiny_q_problem(4, batch=9)
    contributions = last_layer_influence(*closed_form_inputs(net, *batch), *closed_form_inputs(net, *probe))
    lr = 1e-5
    before = huber_losses(net, *probe).mean().item()
    changes = []
    for i in range(len(batch[0])):
        stepped = copy.deepcopy(net)
        loss_i = huber_losses(stepped, batch[0][i : i + 1], batch[1][i : i + 1], batch[2][i : i + 1]).sum()
        loss_i.backward()
        with th.no_grad():
            for p in stepped[-1].parameters():
                p -= lr * p.grad
        changes.append(huber_losses(stepped, *probe).mean().item() - before)
    changes = np.array(changes)
    c = contributions.numpy()
    assert changes[np.argmax(c)] < changes[np.argmin(c)]
    assert np.argmin(changes) == np.argmax(c)
    np.testing.assert_allclose(changes, -lr * c, rtol=1e-3, atol=1e-4 * lr * np.abs(c).max())


def test_influence_in_dqn_train_step_equals_brute_force(monkeypatch):
    """The influence ``train()`` hands to the signal is the brute-force one for the live Q-network."""
    model = ComplementaryDQN(
        "MlpPolicy",
        "CartPole-v1",
        learning_starts=10_000,  # only collect: train() is called by hand below
        buffer_size=500,
        policy_kwargs={"net_arch": [8]},
        contribution="influence",
        candidate_pool=0,
        probe_size=10,
        uniform_fraction=0.5,
        extractor_net_arch=[8],
        seed=0,
        device="cpu",
    )
    model.learn(150)
    captured = {}
    sample_weighted = model.replay_buffer.sample_weighted

    def capture_batch(*args, **kwargs):
        captured["batch"] = sample_weighted(*args, **kwargs)
        return captured["batch"]

    def spy(*args):
        result = last_layer_influence(*args)
        net = nn.Sequential(model.q_net.features_extractor, *model.q_net.q_net)
        buffer = model.replay_buffer

        def as_problem(samples):
            with th.no_grad():
                next_q = model.q_net_target(samples.next_observations).max(dim=1).values.reshape(-1, 1)
                targets = samples.rewards + (1 - samples.dones) * model.gamma * next_q
            return samples.observations, samples.actions.long(), targets

        probe = as_problem(buffer.get_samples_at(buffer.recent_indices(model.probe_size)))
        with th.enable_grad():  # train() may call the closed form under no_grad
            captured["expected"] = brute_force_influence(net, as_problem(captured["batch"].samples), probe)
        captured["got"] = result.detach().clone()
        return result

    monkeypatch.setattr(model.replay_buffer, "sample_weighted", capture_batch)
    monkeypatch.setattr(weighted_replay_mixin, "last_layer_influence", spy)
    model.train(gradient_steps=1, batch_size=12)
    assert "got" in captured, "train() did not compute the influence"
    th.testing.assert_close(captured["got"], captured["expected"], rtol=1e-4, atol=1e-6)


def test_probe_batch_is_normalised_like_training_batches(monkeypatch):
    env = VecNormalize(make_vec_env("CartPole-v1", n_envs=1, seed=0))
    model = ComplementaryDQN(
        "MlpPolicy",
        env,
        learning_starts=10_000,  # only collect: train() is called by hand below
        buffer_size=500,
        policy_kwargs={"net_arch": [8]},
        contribution="influence",
        candidate_pool=0,
        probe_size=10,
        extractor_net_arch=[8],
        seed=0,
        device="cpu",
    )
    model.learn(150)
    captured = {}
    probe_gradients = model._probe_gradients

    def spy(probe, probe_target):
        captured["probe"] = probe
        return probe_gradients(probe, probe_target)

    monkeypatch.setattr(model, "_probe_gradients", spy)
    model.train(gradient_steps=1, batch_size=12)
    buffer = model.replay_buffer
    rows, envs = np.divmod(buffer.recent_indices(model.probe_size), buffer.n_envs)
    np.testing.assert_allclose(
        captured["probe"].observations.numpy(), env.normalize_obs(buffer.observations[rows, envs]), rtol=1e-5
    )
    np.testing.assert_allclose(
        captured["probe"].rewards.numpy().reshape(-1), env.normalize_reward(buffer.rewards[rows, envs]), rtol=1e-5
    )


# --------------------------------------------------------------------------- labels

N_FEATURES = 3


def features(n, start=0):
    return np.arange(start, start + n, dtype=np.float32)[:, None].repeat(N_FEATURES, axis=1)


def test_influence_labels_positive_iff_above_control_mean():
    store = LabelStore(100, N_FEATURES)
    signal = make_signal("influence", store)
    assert isinstance(signal, InfluenceSignal) and signal.needs_influence
    influence = np.array([0.5, -1.0, 2.0, 0.1, 0.3, 1.0, 0.2], dtype=np.float32)
    control = np.array([False, False, False, False, True, True, True])  # control mean = 0.5
    signal.observe(features(7), np.ones(7), control, influence)
    np.testing.assert_array_equal(store.labels[: len(store)], [0, 0, 1, 0, 0, 1, 0])
    np.testing.assert_array_equal(store.features[:7], features(7))


def test_influence_labels_without_control_use_the_median():
    store = LabelStore(100, N_FEATURES)
    InfluenceSignal(store).observe(features(5), np.ones(5), np.zeros(5, bool), np.array([3.0, 1, 2, 5, 4]))
    np.testing.assert_array_equal(store.labels[:5], [0, 0, 0, 1, 1])  # median 3: strictly above it


def test_td_labels_are_within_batch_ranks():
    store = LabelStore(100, N_FEATURES)
    signal = make_signal("td", store)
    assert isinstance(signal, TDSignal) and not signal.needs_influence
    td = np.array([0.5, 0.1, 3.0, 2.0, 0.7])
    signal.observe(features(5), td, np.zeros(5, bool))
    labels = store.labels[:5]
    np.testing.assert_allclose(labels, [0.25, 0.0, 1.0, 0.75, 0.5])
    assert labels.min() == 0 and labels.max() == 1
    signal.observe(features(1), np.array([9.0]), np.zeros(1, bool))  # a batch of one stays in [0, 1]
    assert 0 <= store.labels[5] <= 1


def test_outcome_labels_credit_pending_transitions_by_return_change():
    store = LabelStore(100, N_FEATURES)
    signal = make_signal("outcome", store)
    assert isinstance(signal, OutcomeSignal)
    signal.observe(features(2), np.ones(2), np.zeros(2, bool))
    signal.close_window([10.0, 14.0])  # first window: sets the baseline (12), no label yet
    assert len(store) == 0 and signal.baseline == pytest.approx(12.0)

    signal.observe(features(3, start=10), np.ones(3), np.zeros(3, bool))
    signal.close_window([])  # no episode finished: the window stays open
    assert len(store) == 0
    signal.observe(features(1, start=20), np.ones(1), np.zeros(1, bool))
    signal.close_window([20.0])  # improved over the baseline: every pending transition is credited 1
    assert len(store) == 4
    np.testing.assert_array_equal(store.labels[:4], [1, 1, 1, 1])
    np.testing.assert_array_equal(store.features[:4, 0], [10, 11, 12, 20])
    assert signal.baseline == pytest.approx(0.9 * 12 + 0.1 * 20)

    signal.observe(features(2, start=30), np.ones(2), np.zeros(2, bool))
    signal.close_window([1.0])  # worse than the baseline: 0
    np.testing.assert_array_equal(store.labels[4:6], [0, 0])

    baseline = signal.baseline
    signal.observe(features(1, start=40), np.ones(1), np.zeros(1, bool))
    signal.close_window([baseline])  # a tie: 0.5
    assert store.labels[6] == 0.5


def test_unknown_contribution_name_raises_naming_the_knob():
    with pytest.raises(ValueError, match="contribution") as info:
        make_signal("vibes", LabelStore(10, N_FEATURES))
    assert "vibes" in str(info.value) and "influence" in str(info.value)


def test_label_store_is_fifo_and_reports_positive_share():
    store = LabelStore(4, N_FEATURES)
    assert len(store) == 0 and np.isnan(store.positive_share())
    store.add(features(3), np.array([1, 0, 1], dtype=np.float32))
    assert len(store) == 3 and store.positive_share() == pytest.approx(2 / 3)
    store.add(features(3, start=10), np.array([0, 0, 0], dtype=np.float32))
    assert len(store) == 4
    assert sorted(store.features[:, 0].tolist()) == [2, 10, 11, 12]  # the oldest two aged out
    assert store.positive_share() == pytest.approx(1 / 4)
    store.add(features(9, start=100), np.ones(9, dtype=np.float32))  # more than the capacity: keep the newest
    assert sorted(store.features[:, 0].tolist()) == [105, 106, 107, 108]
    sampled_features, sampled_labels = store.sample(16, np.random.default_rng(0))
    assert sampled_features.shape == (16, N_FEATURES) and np.all(sampled_labels == 1)
