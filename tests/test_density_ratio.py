"""The density-ratio extractor: fast/slow classification, the weights it makes, how they enter, its diagnostics."""

from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch as th
from gymnasium import spaces

from sb3_complementary import ComplementaryDQN, ComplementaryReplayBuffer, ExperienceExtractor
from sb3_complementary.common.extractor import HOLDOUT_MODULUS, fit_classifier, held_out, held_out_auc, ratio_weights
from sb3_complementary.common.extractor_settings import MIN_FAST_MEMORY
from tests.conftest import DENSITY_RATIO, TINY_DQN, TINY_EXTRACTOR, tiny_extractor

DENSITY: dict[str, Any] = {
    **TINY_DQN,
    **DENSITY_RATIO,
    **tiny_extractor(fast_memory=100),
    "candidate_pool": 0,  # the ratio alone: the screen's density-sampling
    "alpha": 1.0,
}


def shifted_buffer(n_rows: int, n_fast: int, shift: float, seed: int = 0, n_envs: int = 1) -> ComplementaryReplayBuffer:
    """A buffer of 2-d Gaussian observations whose ``n_fast`` freshest rows are moved by ``shift``."""
    space = spaces.Box(-np.inf, np.inf, shape=(2,), dtype=np.float32)
    buffer = ComplementaryReplayBuffer(n_rows * n_envs, space, spaces.Discrete(2), device="cpu", n_envs=n_envs)
    rng = np.random.default_rng(seed)
    for t in range(n_rows):
        obs = rng.normal(size=(n_envs, 2)).astype(np.float32) + (shift if t >= n_rows - n_fast else 0.0)
        next_obs = obs + rng.normal(scale=0.1, size=obs.shape).astype(np.float32)
        actions = rng.integers(0, 2, size=(n_envs, 1))
        rewards = np.ones(n_envs, dtype=np.float32)
        buffer.add(obs, next_obs, actions, rewards, np.zeros(n_envs), [{} for _ in range(n_envs)])
    return buffer


def fitted_auc(buffer: ComplementaryReplayBuffer, n_fast: int, steps: int = 300) -> float:
    th.manual_seed(0)
    extractor = ExperienceExtractor(buffer.ratio_input_dim, [32], learning_rate=3e-3)
    rng = np.random.default_rng(0)
    fit_classifier(extractor, buffer, n_fast, steps, 128, rng)
    return held_out_auc(extractor, buffer, n_fast, rng)


# ------------------------------------------------------------------ what the classifier learns
@pytest.mark.parametrize("n_envs", [1, 3])
def test_classifier_separates_a_shifted_fast_memory(n_envs):
    # The slow memory contains the fast one (1/6 of it), so the best possible AUC is about
    # 5/6 * Phi(2) + 1/6 * 0.5 = 0.90 for this shift of 2 per dimension.
    buffer = shifted_buffer(1200, 200, shift=2.0, n_envs=n_envs)
    assert fitted_auc(buffer, 200 * n_envs) > 0.85


def test_classifier_on_well_separated_data_has_an_auc_near_its_best():
    # A shift of 6 per dimension: fast and slow do not overlap. The held-out slow sample is drawn from
    # the whole buffer, 1/12 of which is the fast memory itself, so the best AUC is 11/12 + 1/24 = 0.96.
    buffer = shifted_buffer(1200, 100, shift=6.0)
    assert fitted_auc(buffer, 100) > 0.9


def test_a_constant_classifier_has_an_auc_of_one_half():
    buffer = shifted_buffer(1200, 100, shift=6.0)  # separable data: only the classifier can make it 0.5
    extractor = ExperienceExtractor(buffer.ratio_input_dim, [32], learning_rate=3e-3)
    with th.no_grad():
        for parameter in extractor.parameters():
            parameter.zero_()  # every logit 0: every fast/slow pair is a tie
    assert held_out_auc(extractor, buffer, 100, np.random.default_rng(0)) == 0.5


def test_classifier_cannot_separate_by_recency_alone():
    # Same distribution everywhere: only the insertion time tells fast from slow. If age, sample
    # counts or TD staleness leaked into the inputs, the AUC would be near 1.
    buffer = shifted_buffer(1200, 200, shift=0.0)
    assert 0.35 < fitted_auc(buffer, 200) < 0.65


def test_ratio_inputs_hold_observation_next_state_change_action_reward_terminal():
    buffer = shifted_buffer(10, 0, shift=0.0)
    x = buffer.ratio_inputs(np.array([3]))
    assert buffer.ratio_input_dim == x.shape[1] == 2 + 2 + 2 + 1 + 1
    obs, next_obs = buffer.observations[3, 0], buffer.next_observations[3, 0]
    np.testing.assert_allclose(x[0, :2], obs)
    np.testing.assert_allclose(x[0, 2:4], next_obs - obs)
    assert x[0, 4:6].sum() == 1 and x[0, 6] == 1.0 and x[0, 7] == 0.0


def test_image_observations_fall_back_to_action_reward_terminal():
    space = spaces.Box(0, 255, shape=(3, 8, 8), dtype=np.uint8)
    buffer = ComplementaryReplayBuffer(16, space, spaces.Discrete(3), device="cpu")
    assert buffer.ratio_input_dim == 3 + 1 + 1


def test_fits_never_train_on_the_held_out_slice(monkeypatch):
    buffer = shifted_buffer(800, 100, shift=1.0)
    extractor = ExperienceExtractor(buffer.ratio_input_dim, [8], learning_rate=1e-3)
    seen: list[np.ndarray] = []
    original = buffer.ratio_inputs

    def recording(indices: np.ndarray) -> np.ndarray:
        seen.append(indices.copy())
        return original(indices)

    monkeypatch.setattr(buffer, "ratio_inputs", recording)
    fit_classifier(extractor, buffer, 100, 20, 64, np.random.default_rng(0))
    trained = np.concatenate(seen)
    assert not held_out(trained, buffer.n_envs).any()
    fast = trained.reshape(20, 64)[:, :32]
    assert fast.min() >= 700  # the first half of every batch is the fast memory


# ------------------------------------------------------------------ the weights
def test_ratio_weights_are_tempered_self_normalised_and_capped():
    logits = np.random.default_rng(0).normal(scale=2.0, size=5000)
    sharp = ratio_weights(logits, temperature=1.0, cap=1e9)
    np.testing.assert_allclose(sharp.mean(), 1.0, rtol=1e-5)
    np.testing.assert_allclose(sharp, np.exp(logits) / np.exp(logits).mean(), rtol=1e-4)
    assert np.all(np.diff(sharp[np.argsort(logits)]) >= 0)  # monotone in the classifier's odds

    def ess(w: np.ndarray) -> float:
        return float(w.mean() ** 2 / (w**2).mean())

    flat = ratio_weights(logits, temperature=4.0, cap=1e9)
    assert ess(flat) > ess(sharp)
    capped = ratio_weights(logits, temperature=1.0, cap=3.0)
    assert capped.max() == pytest.approx(3.0) and (sharp > 3).any()


def test_non_finite_logits_get_the_uniform_weight_with_a_warning():
    logits = np.array([0.0, np.nan, 1.0, np.inf, -1.0])
    with pytest.warns(RuntimeWarning, match="2 non-finite extractor outputs"):
        weights = ratio_weights(logits, temperature=1.0, cap=10.0)
    assert weights[1] == weights[3] == 1.0
    np.testing.assert_allclose(weights[[0, 2, 4]].mean(), 1.0, rtol=1e-6)


# ------------------------------------------------------------------ the model
def cartpole_model(extractor: dict[str, Any] | None = None, **overrides: Any) -> ComplementaryDQN:
    """The ratio alone on CartPole; ``extractor`` changes keys of its ``extractor_kwargs``."""
    kwargs = {**DENSITY, **overrides}
    kwargs["extractor_kwargs"] = {**DENSITY["extractor_kwargs"], **(extractor or {})}
    return ComplementaryDQN("MlpPolicy", gym.make("CartPole-v1"), seed=0, **kwargs)


def test_model_fits_rescores_and_reports_diagnostics():
    model = cartpole_model()
    model.learn(600)
    diagnostics = model.replay_diagnostics()
    assert set(diagnostics) == {"ess_fraction", "weight_p5", "weight_p95", "weight_max", "roc_auc"}
    assert np.isfinite(model.extractor_auc)  # fitted (600 transitions > 2 x fast_memory) and measured
    assert diagnostics["roc_auc"] == model.extractor_auc
    weights = model.replay_buffer.replay_weights()
    assert weights.max() > 1.0 > weights.min()  # the re-score moved the weights off uniform
    assert diagnostics["weight_max"] == pytest.approx(weights.max())
    assert model.replay_buffer.beta == 0.0  # the ratio is not undone by IS weights


@pytest.mark.parametrize(
    ("buffer_size", "expected"), [(100_000, 2000), (10_000, 2000), (5000, 1000), (100, 20), (40, 16)]
)
def test_default_fast_memory_is_2000_or_a_fifth_of_a_smaller_buffer(buffer_size, expected):
    model = ComplementaryDQN("MlpPolicy", "CartPole-v1", buffer_size=buffer_size, device="cpu")
    assert model.extractor_settings["fast_memory"] == expected


def test_a_buffer_too_small_for_the_classifier_says_so():
    """Below 32 transitions the fast memory cannot be held out and fitted: the density ratio warns, not silent."""
    with pytest.warns(UserWarning, match=r"buffer_size=20 is below twice the smallest fast memory \(16\)"):
        model = ComplementaryDQN("MlpPolicy", "CartPole-v1", buffer_size=20, device="cpu", **DENSITY_RATIO)
    assert model.extractor_settings["fast_memory"] == 16


@pytest.mark.parametrize("n_envs", [1, 2, 8, 16])
def test_the_held_out_slice_spans_every_env_and_every_env_is_trained_on(n_envs):
    rows = 64
    indices = np.arange(rows * n_envs)
    held = held_out(indices, n_envs)
    envs = indices % n_envs
    assert set(envs[held]) == set(range(n_envs))
    assert set(envs[~held]) == set(range(n_envs))
    assert held.mean() == pytest.approx(1 / HOLDOUT_MODULUS)
    if n_envs == 1:  # one env: the slice of the studies, every 8th transition
        np.testing.assert_array_equal(held, indices % 8 == 0)


@pytest.mark.parametrize("n_envs", [2, 8])
def test_the_fast_memory_holds_held_out_rows_with_many_envs(n_envs):
    buffer = shifted_buffer(200, 20, shift=3.0, n_envs=n_envs)
    fast = buffer.recent_indices(MIN_FAST_MEMORY)
    assert held_out(fast, n_envs).any()
    assert np.isfinite(fitted_auc(buffer, MIN_FAST_MEMORY, steps=50))


def test_fast_memory_waits_for_a_buffer_twice_its_size():
    model = cartpole_model(extractor={"fast_memory": 400}, buffer_size=1000)
    model.learn(500)  # fewer than 800 transitions: fast and slow would be nearly the same data
    assert np.isnan(model.extractor_auc)
    np.testing.assert_allclose(model.replay_buffer.replay_weights(), 1.0)


def test_alpha_zero_control_draws_uniformly_and_builds_no_extractor():
    """The control: every priority is 1 whatever the ratio, so nothing fits a ratio that no draw reads."""
    model = cartpole_model(alpha=0.0)
    model.learn(600)
    assert model.extractor is None and model.replay_buffer.tree is None
    np.testing.assert_allclose(model.replay_buffer.replay_weights(), 1.0)
    assert model.replay_diagnostics()["ess_fraction"] == pytest.approx(1.0)


def test_non_finite_classifier_output_falls_back_to_uniform_and_training_goes_on():
    model = cartpole_model()
    model.learn(400)
    with th.no_grad():
        model.extractor.net[0].weight.fill_(float("nan"))
    with pytest.warns(RuntimeWarning, match="non-finite extractor outputs"):
        model.refresh_scores()
    np.testing.assert_allclose(model.replay_buffer.replay_weights(), 1.0)


def test_queries_write_nothing():
    model = cartpole_model()
    model.learn(400)
    buffer = model.replay_buffer
    buffer.add(np.zeros((1, 4)), np.zeros((1, 4)), np.zeros((1, 1)), np.zeros(1), np.zeros(1), [{}])
    leaves, pending = buffer.tree.leaves.copy(), list(buffer._unscored_rows)
    diagnostics = model.replay_diagnostics()
    buffer.task_shares()
    np.testing.assert_array_equal(buffer.tree.leaves, leaves)
    assert buffer._unscored_rows == pending
    buffer._flush_new()  # what the next draw sees is what the query reported
    assert model.replay_diagnostics() == pytest.approx(diagnostics, nan_ok=True)


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("temperature", 0.0, r"extractor_kwargs\['temperature'\] must be in \(0.0, inf\], got 0.0"),
        ("cap", 0.5, r"extractor_kwargs\['cap'\] must be in \[1.0, inf\], got 0.5"),
        ("fast_memory", 1, r"extractor_kwargs\['fast_memory'\] must be in \[16, 250\], got 1"),
        ("fast_memory", 251, r"extractor_kwargs\['fast_memory'\] must be in \[16, 250\], got 251"),
        ("is_exponent", 1.5, r"extractor_kwargs\['is_exponent'\] must be in \[0.0, 1.0\], got 1.5"),
    ],
)
def test_bad_extractor_kwargs_name_the_key_its_range_and_the_value(key, value, message):
    with pytest.raises(ValueError, match=message):
        cartpole_model(extractor={key: value})


# ------------------------------------------------------------------ persistence
def test_save_load_keeps_the_classifier_and_its_auc(tmp_path):
    model = cartpole_model()
    model.learn(600)
    model.save(tmp_path / "model")
    model.save_replay_buffer(tmp_path / "buffer")
    loaded = ComplementaryDQN.load(tmp_path / "model", env=gym.make("CartPole-v1"))
    loaded.load_replay_buffer(tmp_path / "buffer")
    assert loaded.extractor_auc == model.extractor_auc
    for key, value in model.extractor.state_dict().items():
        th.testing.assert_close(loaded.extractor.state_dict()[key], value)
    np.testing.assert_allclose(loaded.replay_buffer.replay_weights(), model.replay_buffer.replay_weights())
    assert loaded.replay_buffer.neutral_score == 1.0


def test_a_buffer_saved_before_the_density_ratio_loads_and_gets_the_neutral_ratio(tmp_path):
    kwargs = {**TINY_DQN, **DENSITY_RATIO, **TINY_EXTRACTOR}
    old = ComplementaryDQN("MlpPolicy", gym.make("CartPole-v1"), seed=0, **kwargs)
    old.learn(200)
    del old.replay_buffer.neutral_score  # as pickled before the attribute existed
    old.save_replay_buffer(tmp_path / "old")
    model = cartpole_model()
    model.load_replay_buffer(tmp_path / "old.pkl")
    assert model.replay_buffer.neutral_score == 1.0
    model.learn(400, reset_num_timesteps=False)  # and it trains on
    assert np.isfinite(model.extractor_auc)


def pool_model(**overrides: Any) -> ComplementaryDQN:
    return cartpole_model(candidate_pool=4, uniform_fraction=0.0, **overrides)


def test_density_ratio_with_a_pool_scores_ratio_times_fresh_td():
    model = pool_model(score_floor=0.5)
    model.learn(600)
    buffer = model.replay_buffer
    candidates = np.array([3, 10, 20, 30])
    assert not np.allclose(buffer.scores[candidates], 1.0)  # the re-score stored ratio weights, not the neutral 1
    buffer.update_scores(candidates, np.array([2.0, 0.5, 1.0, 4.0]))  # the stored ratio weights
    td = np.array([0.1, 1.0, 3.0, 0.25])  # |TD| measured now; the floor lifts 0.1 and 0.25 to 0.5
    # ratio x max(|TD|, 0.5): 2 x 0.5, 0.5 x 1, 1 x 3, 4 x 0.5
    seen = {}
    select = buffer.select_from_candidates

    def spy(candidates, samples, scores, batch_size, **kwargs):
        seen["scores"] = scores
        return select(candidates, samples, scores, batch_size, **kwargs)

    # Through the model's draw: a pool of exactly these four candidates, their |TD| set.
    model.candidate_pool, model.batch_size = 1, 4
    model.replay_buffer.uniform_indices = lambda n: candidates.copy()
    model._current_td_abs = lambda samples: td
    buffer.select_from_candidates = spy
    model._draw_batch(4)
    np.testing.assert_allclose(seen["scores"], [1.0, 0.5, 3.0, 2.0])
