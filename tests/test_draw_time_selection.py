"""Draw-time selection (``candidate_pool``): the pool pick, its IS weights, fresh features, every algorithm's hook."""

import numpy as np
import pytest
import torch as th
from gymnasium import spaces
from stable_baselines3.common.type_aliases import DictReplayBufferSamples

from sb3_complementary import (
    ComplementaryDictReplayBuffer,
    ComplementaryDQN,
    ComplementaryReplayBuffer,
)
from sb3_complementary.common.buffers import take_rows
from tests.algorithms import SPECS, STEPS, build, fixed_batch
from tests.conftest import DENSITY_RATIO, TINY_DQN, TINY_EXTRACTOR, fill_buffer, tiny_extractor

OBS = spaces.Box(-np.inf, np.inf, (3,), np.float32)
ACT = spaces.Discrete(4)


def make_buffer(buffer_size=40, **kwargs) -> ComplementaryReplayBuffer:
    return ComplementaryReplayBuffer(buffer_size, OBS, ACT, device="cpu", **kwargs)


def test_take_rows_repeats_rows_of_every_field():
    buffer = make_buffer(20, n_envs=2, n_steps=3, gamma=0.9)
    fill_buffer(buffer, 12)
    candidates = np.array([0, 5, 9, 14])
    samples = buffer.get_samples_at(candidates)
    picked = take_rows(samples, np.array([3, 3, 0]))
    expected = buffer.get_samples_at(candidates[[3, 3, 0]])
    for field in ("observations", "actions", "next_observations", "dones", "rewards", "discounts"):
        assert th.equal(getattr(picked, field), getattr(expected, field)), field


def test_take_rows_on_dict_observations():
    space = spaces.Dict({"vec": spaces.Box(-1, 1, (2,), np.float32), "img": spaces.Box(0, 255, (4, 4, 1), np.uint8)})
    buffer = ComplementaryDictReplayBuffer(10, space, ACT, device="cpu")
    for t in range(6):
        obs = {"vec": np.full((1, 2), t / 10, dtype=np.float32), "img": np.full((1, 4, 4, 1), t, dtype=np.uint8)}
        buffer.add(obs, obs, np.array([[t % 4]]), np.ones(1), np.zeros(1), [{}])
    samples = buffer.get_samples_at(np.arange(6))
    picked = take_rows(samples, np.array([5, 1]))
    assert isinstance(picked, DictReplayBufferSamples)
    np.testing.assert_array_equal(picked.observations["img"][:, 0, 0, 0].numpy(), [5, 1])
    assert picked.discounts is None


@pytest.mark.parametrize("uniform_fraction", [0.0, 0.25])
@pytest.mark.parametrize("beta", [0.4, 1.0])
def test_selection_weights_are_against_the_pool(uniform_fraction, beta):
    """One slot picks candidate i with q_i = u/P + (1-u) p_i/sum(p); its IS weight is (P q_i)^-beta."""
    buffer = make_buffer(40, alpha=0.7, beta=beta, epsilon=0.01, uniform_fraction=uniform_fraction)
    fill_buffer(buffer, 40)
    candidates = np.arange(0, 40, 4)  # P = 10
    scores = np.linspace(0.05, 0.95, 10).astype(np.float32)
    np.random.seed(0)
    batch, rates = buffer.select_from_candidates(candidates, buffer.get_samples_at(candidates), scores, 32)
    n_uniform = round(32 * uniform_fraction)
    assert batch.control.sum() == n_uniform and batch.control[:n_uniform].all()
    priorities = (scores + 0.01) ** 0.7
    q = n_uniform / 32 / 10 + (1 - n_uniform / 32) * priorities / priorities.sum()
    positions = np.searchsorted(candidates, batch.indices)
    raw = (10 * q[positions]) ** -beta
    np.testing.assert_allclose(batch.raw_weights, raw, rtol=1e-6)
    np.testing.assert_allclose(batch.weights.numpy().reshape(-1), raw / raw.max(), rtol=1e-6)
    np.testing.assert_allclose(rates, 10 * q, rtol=1e-6)  # replayed 10 q_i times as often as uniformly
    rows = batch.indices  # n_envs = 1: flat index = row
    np.testing.assert_array_equal(batch.samples.observations.numpy(), buffer.observations[rows, 0])


def test_selection_frequencies_follow_the_scores():
    buffer = make_buffer(8, alpha=1.0, epsilon=1e-12, score_floor=0.0, uniform_fraction=0.0)
    fill_buffer(buffer, 8)
    candidates = np.arange(8)
    samples = buffer.get_samples_at(candidates)
    scores = np.array([0, 1, 2, 0, 4, 1, 0, 8], dtype=np.float32)
    np.random.seed(0)
    counts = np.zeros(8)
    for _ in range(400):
        batch, _ = buffer.select_from_candidates(candidates, samples, scores, 32)
        counts += np.bincount(batch.indices, minlength=8)
    assert np.all(counts[scores == 0] == 0)
    np.testing.assert_allclose(counts / counts.sum(), scores / scores.sum(), atol=0.01)


def test_equal_scores_select_uniformly_with_unit_weights():
    buffer = make_buffer(40, uniform_fraction=0.25)
    fill_buffer(buffer, 40)
    candidates = buffer.uniform_indices(64)
    batch, rates = buffer.select_from_candidates(candidates, buffer.get_samples_at(candidates), np.full(64, 0.5), 16)
    np.testing.assert_allclose(batch.weights.numpy(), 1.0)
    np.testing.assert_allclose(rates, 1.0)


def test_dqn_current_td_abs_matches_the_train_step_and_has_no_side_effects():
    model = ComplementaryDQN("MlpPolicy", "CartPole-v1", seed=0, **TINY_DQN, **TINY_EXTRACTOR)
    model.learn(200)
    data = model.replay_buffer.get_samples_at(np.arange(32))
    torch_state = th.random.get_rng_state()
    td_abs = model._current_td_abs(data)
    assert th.equal(th.random.get_rng_state(), torch_state)
    with th.no_grad():
        q = th.gather(model.q_net(data.observations), 1, data.actions.long())
        expected = (q - model._td_target(data)).abs().numpy().reshape(-1)
    np.testing.assert_allclose(td_abs, expected, rtol=1e-6)


def test_draw_time_selection_trains_and_round_trips(tmp_path):
    model = ComplementaryDQN("MlpPolicy", "CartPole-v1", seed=0, **TINY_DQN, **TINY_EXTRACTOR)  # a pool of 4
    model.learn(400)
    assert len(model._selection_rates) == model._n_updates > 0
    model.save(tmp_path / "model")
    loaded = ComplementaryDQN.load(tmp_path / "model", env=model.get_env())
    assert loaded.candidate_pool == 4
    loaded.learn(100, reset_num_timesteps=False)
    assert loaded._selection_rates


#: Draw-time selection with hand-set scores: pools of 4 x 16 = 64, priority ``max(score, 1)`` (alpha 1,
#: floor 1, epsilon 0), no uniform share. A candidate's replay rate is ``64 * priority / sum(priorities)``.
KNOWN_POOL = {"contribution": "fresh_td", "candidate_pool": 4, "alpha": 1.0, "score_floor": 1.0, "epsilon": 0.0}
POOL = 4 * TINY_DQN["batch_size"]
QUARTER = np.where(np.arange(POOL) < POOL // 4, 4.0, 0.0)  # 16 candidates at priority 4, 48 at the floor's 1
ONE_OF_64 = np.where(np.arange(POOL) == 0, 1000.0, 0.0)  # one at 1000, 63 at 1


@pytest.mark.parametrize(
    ("scores", "ess", "p5", "p95", "largest"),
    [
        # Equal scores: uniform replay, every rate 1.
        (np.full(POOL, 0.5), 1.0, 1.0, 1.0, 1.0),
        # sum = 16 * 4 + 48 = 112: rates 64 * 4 / 112 = 16/7 (a quarter) and 64 / 112 = 4/7;
        # Kish ESS (sum p)^2 / (n sum p^2) = 112^2 / (64 * (16 * 16 + 48)) = 49/76.
        (QUARTER, 49 / 76, 4 / 7, 16 / 7, 16 / 7),
        # sum = 1063: one rate 64000/1063, the rest 64/1063; ESS = 1063^2 / (64 * (1000^2 + 63)) ~ 0.0177.
        (ONE_OF_64, 1063**2 / (64 * (1000**2 + 63)), 64 / 1063, 64 / 1063, 64_000 / 1063),
    ],
    ids=["uniform", "a-quarter-at-4x", "one-of-64"],
)
def test_selection_diagnostics_of_known_scores(monkeypatch, scores, ess, p5, p95, largest):
    """The diagnostics of a pool whose scores are set by hand are the values computed by hand."""
    model = ComplementaryDQN("MlpPolicy", "CartPole-v1", seed=0, uniform_fraction=0.0, **KNOWN_POOL, **TINY_DQN)
    monkeypatch.setattr(model, "_current_td_abs", lambda samples: scores)  # fresh_td: the score is the |TD|
    model.learn(150)
    assert len(model._selection_rates) > 0
    diagnostics = model.replay_diagnostics()
    assert diagnostics["ess_fraction"] == pytest.approx(ess, rel=1e-9)
    assert diagnostics["weight_p5"] == pytest.approx(p5, rel=1e-9)
    assert diagnostics["weight_p95"] == pytest.approx(p95, rel=1e-9)
    assert diagnostics["weight_max"] == pytest.approx(largest, rel=1e-9)


def test_draw_time_selection_is_deterministic():
    def run() -> np.ndarray:
        model = ComplementaryDQN("MlpPolicy", "CartPole-v1", seed=3, candidate_pool=2, **TINY_DQN, **TINY_EXTRACTOR)
        model.learn(300)
        return th.nn.utils.parameters_to_vector(model.q_net.parameters()).detach().numpy()

    np.testing.assert_array_equal(run(), run())


@pytest.mark.parametrize("bad", [-1, 1.5])
def test_candidate_pool_rejects_bad_values(bad):
    with pytest.raises(ValueError, match="candidate_pool"):
        ComplementaryDQN("MlpPolicy", "CartPole-v1", candidate_pool=bad, **TINY_DQN)


COMPLEMENTARY = [name for name, spec in SPECS.items() if spec.complementary]


def _state(model) -> tuple[th.Tensor, list[tuple[str, bool]], dict[str, th.Tensor]]:
    """Everything a side-effect-free measurement must leave as it was: parameters, buffers, modes, RNG."""
    tensors = {f"{k}": v.detach().clone() for k, v in model.policy.state_dict().items()}
    modes = [(name, module.training) for name, module in model.policy.named_modules()]
    return th.random.get_rng_state(), modes, tensors


def _assert_same_state(before, after) -> None:
    assert th.equal(before[0], after[0]), "the measurement moved torch's RNG stream"
    assert before[1] == after[1], "the measurement left a module in another train/eval mode"
    for key, value in before[2].items():
        assert th.equal(value, after[2][key]), f"the measurement changed {key}"


@pytest.mark.parametrize("name", COMPLEMENTARY)
def test_current_td_abs_is_what_the_train_step_feeds_back(name, monkeypatch):
    """At the same parameters and the same target draws, the hook's |TD| is the train step's, for every algorithm."""
    model = build(name, candidate_pool=2, learning_starts=50)
    model.learn(300)
    n = model.batch_size
    data = model.replay_buffer.get_samples_at(np.arange(n))
    before = _state(model)
    model._current_td_abs(data)
    _assert_same_state(before, _state(model))
    # The train step draws more than the target (SAC's actor loss): pin every draw of the actor's to one
    # seed, and start the measurement and the step from the same torch state (TD3's smoothing noise).
    if hasattr(getattr(model, "actor", None), "action_log_prob"):
        original_log_prob = model.actor.action_log_prob

        def seeded_log_prob(*args, **kwargs):
            with th.random.fork_rng():
                th.manual_seed(123)
                return original_log_prob(*args, **kwargs)

        monkeypatch.setattr(model.actor, "action_log_prob", seeded_log_prob)
    monkeypatch.setattr(model.replay_buffer, "sample_weighted", fixed_batch(model, np.ones(n)))
    monkeypatch.setattr(model, "_draw_batch", lambda batch_size: model.replay_buffer.sample_weighted(batch_size))
    th.manual_seed(7)
    measured = model._current_td_abs(model.replay_buffer.sample_weighted(n).samples)
    fed_back = []
    monkeypatch.setattr(  # the step's own |TD|, from the estimate it trained and its target
        model,
        "_replay_feedback",
        lambda batch, current, target: fed_back.append(model._td_abs(current.detach(), target).numpy().reshape(-1)),
    )
    th.manual_seed(7)
    model.train(gradient_steps=1, batch_size=n)
    assert measured.shape == (n,)
    np.testing.assert_array_equal(measured, fed_back[0])


@pytest.mark.parametrize("contribution", ["fresh_td", "density_ratio"])
@pytest.mark.parametrize("name", COMPLEMENTARY)
def test_every_algorithm_selects_from_a_pool(name, contribution):
    # alpha set for both: the actor-critic classes draw uniformly (alpha=0) by default.
    if contribution == "fresh_td":
        kwargs = {"score_floor": 1.0, "alpha": 0.4}
    else:
        kwargs = {"alpha": 1.0, **tiny_extractor(fast_memory=40)}
    model = build(name, candidate_pool=2, contribution=contribution, **kwargs)
    model.learn(STEPS)
    # One pool of 2 x batch_size candidates per gradient step (the deque keeps the last 1,000).
    assert len(model._selection_rates) == min(model._n_updates, 1000) > 0
    for rates in model._selection_rates:
        assert rates.shape == (2 * model.batch_size,)
        # P * q_i over a pool: its mean is 1 whatever the scores (the q_i sum to 1).
        assert rates.mean() == pytest.approx(1.0, abs=1e-9)
    if contribution == "density_ratio":  # ratio x |TD| differ between candidates: the selection is not uniform
        # (a uniform one has every rate exactly 1, ESS exactly 1; the tiny QR-DQN's is 0.9998 here)
        assert model.replay_diagnostics()["ess_fraction"] < 1.0 - 1e-9


def test_all_zero_priorities_select_uniformly():
    """epsilon = floor = 0 is allowed only with uniform_fraction=1; zero scores must not break the pick."""
    buffer = make_buffer(20, epsilon=0.0, score_floor=0.0, uniform_fraction=1.0)
    fill_buffer(buffer, 20)
    candidates = np.arange(0, 20, 2)
    batch, rates = buffer.select_from_candidates(candidates, buffer.get_samples_at(candidates), np.zeros(10), 8)
    assert batch.control.all()
    assert set(batch.indices) <= set(candidates)
    np.testing.assert_allclose(rates, 1.0)


def test_crossq_measures_a_pool_by_batch_norm_chunks_of_the_train_steps_size():
    """
    CrossQ normalises a train step's joint pass by B + B rows: the pool's |TD| is measured in chunks
    of ``batch_size``, so the first chunk of a pool of two batches reads exactly as that chunk alone
    (a joint pass over the whole pool, 2B + 2B rows, gave other values).
    """
    model = build("ComplementaryCrossQ", candidate_pool=2, learning_starts=50)
    model.learn(300)
    n = model.batch_size
    pool = model.replay_buffer.get_samples_at(np.arange(2 * n))
    first = model.replay_buffer.get_samples_at(np.arange(n))
    measured = model._current_td_abs(pool)
    assert measured.shape == (2 * n,)
    np.testing.assert_array_equal(measured[:n], model._current_td_abs(first))


def test_a_uniform_selection_skips_the_pools_forward_pass(monkeypatch):
    """With alpha=0 every priority is 1: the pool's |TD| is not measured, and the picks are those any scores give."""
    model = ComplementaryDQN(
        "MlpPolicy", "CartPole-v1", seed=0, **{**TINY_DQN, **tiny_extractor(fast_memory=40), "alpha": 0.0}
    )
    monkeypatch.setattr(model, "_current_td_abs", lambda data: pytest.fail("the pool's |TD| was measured"))
    model.learn(300)
    assert not model._selection_rates and model._n_updates > 0  # no pool is drawn: SB3's uniform draw
    buffer = model.replay_buffer
    candidates = np.arange(64)
    samples = buffer.get_samples_at(candidates)
    picks = []
    for scores in (np.ones(64), np.random.default_rng(0).exponential(size=64)):
        np.random.seed(1)
        picks.append(buffer.select_from_candidates(candidates, samples, scores, 16)[0].indices)
    np.testing.assert_array_equal(picks[0], picks[1])


def test_the_density_ratio_draw_prefers_high_scores_with_unit_is_weights(monkeypatch):
    """
    Through ``_draw_batch`` with the density ratio (the default until 2026-12-07): the IS weights are
    exactly 1 (the shift is not undone), and the scored three quarters of a batch go to the
    candidates whose fresh |TD| is high (here: the candidates with an even flat index get |TD| 1,
    the others 0.001).
    """
    model = ComplementaryDQN("MlpPolicy", "CartPole-v1", seed=0, **{**TINY_DQN, **DENSITY_RATIO, **TINY_EXTRACTOR})
    model.learn(300)
    monkeypatch.setattr(
        model, "_current_td_abs", lambda data: np.where(np.arange(len(data.rewards)) % 2 == 0, 1.0, 1e-3)
    )
    evens = []
    for _ in range(50):
        batch = model._draw_batch(model.batch_size)
        np.testing.assert_array_equal(batch.weights.numpy(), 1.0)
        rates = model._selection_rates[-1]
        evens.append(rates[0::2].sum() / rates.sum())  # the even pool positions' share of the draws
    # Uniform: a half. Scored share 3/4 by ratio x |TD| (the even candidates' |TD| is 1000x): about 7/8.
    assert np.mean(evens) > 0.8


def test_laber_weights_are_the_pools_mean_priority_over_the_candidates():
    """
    The default, LaBER-mean (Lahire et al. 2022): with no uniform share, a pick's IS weight is
    mean(p) / p_i, unscaled.
    """
    model = ComplementaryDQN("MlpPolicy", "CartPole-v1", seed=0, **TINY_DQN)
    assert (model.contribution, model.uniform_fraction, model.score_floor, model.epsilon) == ("laber", 0.0, 0.0, 1e-6)
    model.learn(300)
    assert model.replay_buffer.beta == 1.0  # fixed, not annealed
    td = np.linspace(0.1, 2.0, model.candidate_pool * model.batch_size)
    model._current_td_abs = lambda data: td  # type: ignore[method-assign]
    batch = model._draw_batch(model.batch_size)
    p = td + 1e-6  # (max(|TD|, floor 0) + epsilon) ** 1
    np.testing.assert_allclose(model._selection_rates[-1], p / p.mean(), rtol=1e-6)
    weights = batch.weights.numpy().reshape(-1)
    np.testing.assert_allclose(weights, batch.raw_weights, rtol=1e-6)  # not divided by the batch maximum
    allowed = p.mean() / p
    assert all(np.isclose(allowed, w, rtol=1e-5).any() for w in weights)
    assert weights.max() > 1.0


def test_laber_needs_a_pool():
    with pytest.raises(ValueError, match=r"contribution='laber' measures \|TD\| on a candidate pool"):
        ComplementaryDQN("MlpPolicy", "CartPole-v1", contribution="laber", candidate_pool=0, **TINY_DQN)
