"""Drop-in: ComplementaryDQN and PrioritizedDQN run wherever SB3's DQN runs (short learns, tiny nets)."""

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces
from stable_baselines3 import DQN
from stable_baselines3.common.callbacks import BaseCallback, CallbackList, CheckpointCallback, EvalCallback
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.envs import FakeImageEnv, IdentityEnv, SimpleMultiObsEnv
from stable_baselines3.common.evaluation import evaluate_policy
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv, VecNormalize

from sb3_complementary import (
    ComplementaryDictReplayBuffer,
    ComplementaryDQN,
    PrioritizedDQN,
)
from tests.conftest import ALGOS, TINY_DQN, TINY_EXTRACTOR, ObsSpaceEnv, make_model
from tests.replay_breakage import replay_one_transition_in_every_draw, select_regardless_of_scores
from tests.replay_checks import (
    check_draws_spread,
    check_every_update_drew,
    check_is_weights,
    check_replay,
    check_selection_follows_scores,
    check_trained_buffer,
    recorded_draws,
)

STEPS = 400


def env_factory(kind: str):
    if kind == "box":
        return gym.make("CartPole-v1")
    if kind == "discrete":
        return IdentityEnv(dim=4, ep_length=20)
    if kind == "multibinary":
        return ObsSpaceEnv(spaces.MultiBinary(4))
    if kind == "multidiscrete":
        return ObsSpaceEnv(spaces.MultiDiscrete([3, 2, 4]))
    raise AssertionError(kind)


#: The default (LaBER), the density-ratio extractor on the pool and on the sum tree, and PER.
DROP_IN = ["complementary-default", "complementary-density", "complementary-tree", "prioritized"]


def learn(model, steps=STEPS, **kwargs):
    """``model.learn(steps)``; every batch its train steps drew, recorded (tests/replay_checks.py)."""
    with recorded_draws(model) as draws:
        model.learn(steps, **kwargs)
    return draws


def check_learned(model, draws, steps=STEPS):
    """
    It ran, trained, kept a healthy tree, and (for the density ratio) fitted the extractor; and what a
    broken replay would fail (:func:`~tests.replay_checks.check_replay`): as many gradient steps as the
    configuration asks for, each on a drawn batch, the draws spread over the buffer, IS weights and
    picks as the selection implies.
    """
    check_trained_buffer(model, steps)
    buffer = model.replay_buffer
    if isinstance(model, ComplementaryDQN):
        if model.extractor is not None:  # the density-ratio classifier
            assert np.isfinite(model.extractor_auc), "the classifier was never fitted"
            logits = model.extractor.numpy_logits(buffer.ratio_inputs(buffer.valid_indices()))
            assert np.all(np.isfinite(logits)) and logits.std() > 0
            scores = buffer.scores[buffer.valid_indices()]
            assert np.all(np.isfinite(scores)) and scores.std() > 0, "the buffer was never re-scored by the ratio"
        else:  # the |TD| kinds and uniform draws build no extractor
            assert model.contribution != "density_ratio" or model.alpha == 0
        if model.candidate_pool and model.alpha > 0:
            assert any(draw.candidates is not None for draw in draws), "no batch was selected from a pool"
    env = model.get_env()
    obs = env.reset()
    actions, _ = model.predict(obs, deterministic=True)
    assert actions.shape == (env.num_envs,)
    assert all(env.action_space.contains(int(a)) for a in actions)
    check_replay(model, draws)


@pytest.mark.parametrize("algo", list(ALGOS))
def test_box_observations(algo):
    model = make_model(algo, "CartPole-v1", seed=0)
    draws = learn(model)
    check_learned(model, draws)


@pytest.mark.parametrize("kind", ["discrete", "multibinary", "multidiscrete"])
@pytest.mark.parametrize("algo", DROP_IN)
def test_other_observation_spaces(algo, kind):
    model = make_model(algo, env_factory(kind), seed=0)
    draws = learn(model)
    check_learned(model, draws)


@pytest.mark.parametrize("algo", DROP_IN)
def test_several_envs_dummy_vec_env(algo):
    env = make_vec_env("CartPole-v1", n_envs=3, seed=0, vec_env_cls=DummyVecEnv)
    model = make_model(algo, env, seed=0)
    assert model.replay_buffer.n_envs == 3
    draws = learn(model)
    check_learned(model, draws)
    # Transitions of every env are stored and sampled.
    envs = np.concatenate([model.replay_buffer.sample_weighted(64).indices % 3 for _ in range(5)])
    assert set(envs.tolist()) == {0, 1, 2}


def test_several_discrete_obs_envs():
    """SB3 reshapes Discrete observations of several envs: the extractor's inputs must follow."""
    env = make_vec_env(lambda: IdentityEnv(dim=3, ep_length=10), n_envs=2, seed=0)
    model = make_model("complementary-density", env, seed=0)
    draws = learn(model)
    check_learned(model, draws)


def test_subproc_vec_env():
    env = make_vec_env("CartPole-v1", n_envs=2, seed=0, vec_env_cls=SubprocVecEnv)
    try:
        model = make_model("complementary-default", env, seed=0)
        draws = learn(model)
        check_learned(model, draws)
    finally:
        env.close()


def test_vec_normalize():
    env = VecNormalize(make_vec_env("CartPole-v1", n_envs=2, seed=0), gamma=0.99)
    model = make_model("complementary-default", env, seed=0)
    draws = learn(model)
    check_learned(model, draws)
    assert model._vec_normalize_env is env
    # Samples come back normalised: the stored raw observations are not what the batch holds.
    buffer = model.replay_buffer
    np.random.seed(0)
    batch = buffer.sample_weighted(32, env=env)
    rows, envs = np.divmod(batch.indices, buffer.n_envs)
    raw = buffer.observations[rows, envs]
    np.testing.assert_allclose(batch.samples.observations.numpy(), env.normalize_obs(raw), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("algo", DROP_IN)
def test_cnn_policy_on_small_images(algo):
    env = FakeImageEnv(screen_height=36, screen_width=36, n_channels=1, discrete=True)
    policy_kwargs = {"net_arch": [16], "features_extractor_kwargs": {"features_dim": 16}}
    model = make_model(algo, env, policy="CnnPolicy", buffer_size=200, policy_kwargs=policy_kwargs, seed=0)
    draws = learn(model, 200)
    check_learned(model, draws, 200)


@pytest.mark.parametrize("algo", DROP_IN)
def test_multi_input_policy_on_dict_env(algo):
    env = SimpleMultiObsEnv(random_start=False)
    policy_kwargs = {"net_arch": [16], "features_extractor_kwargs": {"cnn_output_dim": 16}}
    model = make_model(algo, env, policy="MultiInputPolicy", buffer_size=200, policy_kwargs=policy_kwargs, seed=0)
    assert isinstance(model.replay_buffer, ComplementaryDictReplayBuffer)
    draws = learn(model, 200)
    check_learned(model, draws, 200)


@pytest.mark.parametrize("algo", DROP_IN)
def test_optimize_memory_usage(algo):
    model = make_model(
        algo,
        "CartPole-v1",
        buffer_size=100,  # wraps several times
        optimize_memory_usage=True,
        replay_buffer_kwargs={"handle_timeout_termination": False},
        seed=0,
    )
    assert model.replay_buffer.optimize_memory_usage
    draws = learn(model)
    check_learned(model, draws)
    buffer = model.replay_buffer
    assert buffer.full
    buffer.sample_weighted(1)  # scores may be assigned lazily: read once
    assert np.all(buffer.tree.leaves[buffer.pos * buffer.n_envs + np.arange(buffer.n_envs)] == 0)


@pytest.mark.parametrize("algo", ["complementary-default", "complementary-fresh-td", "prioritized"])
def test_n_step_returns(algo):
    model = make_model(algo, "CartPole-v1", n_steps=3, seed=0)
    assert model.replay_buffer.n_steps == 3
    assert model.replay_buffer.gamma == model.gamma
    draws = learn(model)
    check_learned(model, draws)
    assert model.replay_buffer.sample_weighted(8).samples.discounts is not None


def skip_every_other_train(model):
    """A train loop that silently runs only every other ``train()`` call (the updates it should have done, lost)."""
    train, calls = model.train, [0]

    def every_other(gradient_steps, batch_size=100):
        calls[0] += 1
        if calls[0] % 2:
            train(gradient_steps, batch_size)

    model.train = every_other
    return calls


#: A deliberately broken replay, and the checks of check_learned it must fail. ``select_regardless_of_scores``
#: leaves fresh |TD| (IS exponent 0) with IS weights of 1 either way: only the selection's rates show it.
BROKEN_CASES = [
    ("complementary-default", "one-transition", ["spread", "is_weights", "selection"]),
    ("complementary-density", "one-transition", ["spread", "selection"]),
    ("complementary-tree", "one-transition", ["spread"]),
    ("prioritized", "one-transition", ["spread", "is_weights"]),
    ("complementary-default", "uniform-selection", ["is_weights", "selection"]),
    ("complementary-fresh-td", "uniform-selection", ["selection"]),
    ("complementary-default", "skipped-updates", ["updates"]),
    ("prioritized", "skipped-updates", ["updates"]),
]
CHECKS = {
    "updates": check_every_update_drew,
    "spread": check_draws_spread,
    "is_weights": check_is_weights,
    "selection": check_selection_follows_scores,
}


@pytest.mark.parametrize("algo, breakage, failing", BROKEN_CASES, ids=[f"{a}-{b}" for a, b, _ in BROKEN_CASES])
def test_check_learned_fails_for_a_broken_replay(algo, breakage, failing, monkeypatch):
    """Each replay check of :func:`check_learned` can fail: a broken replay fails the ones listed, on CartPole."""
    model = make_model(algo, "CartPole-v1", seed=0)
    calls = {
        "one-transition": lambda: replay_one_transition_in_every_draw(monkeypatch),
        "uniform-selection": lambda: select_regardless_of_scores(monkeypatch),
        "skipped-updates": lambda: skip_every_other_train(model),
    }[breakage]()
    draws = learn(model)
    assert calls[0] > 0, "the breakage was never used: patch the draw this configuration takes instead"
    for name in failing:
        with pytest.raises(AssertionError):
            CHECKS[name](model, draws)
    with pytest.raises(AssertionError):
        check_learned(model, draws)


def test_positional_arguments_like_dqn():
    dqn = DQN("MlpPolicy", "CartPole-v1", 5e-4, 300, 10, 16, device="cpu")
    ours = ComplementaryDQN("MlpPolicy", "CartPole-v1", 5e-4, 300, 10, 16, device="cpu")
    prioritized = PrioritizedDQN("MlpPolicy", "CartPole-v1", 5e-4, 300, 10, 16, device="cpu")
    for model in (ours, prioritized):
        for name in ("learning_rate", "buffer_size", "learning_starts", "batch_size"):
            assert getattr(model, name) == getattr(dqn, name)


# --------------------------------------------------------------------------- callbacks


class CountSteps(BaseCallback):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def _on_step(self):
        self.calls += 1
        return True


def test_eval_and_checkpoint_callbacks(tmp_path):
    eval_callback = EvalCallback(
        Monitor(gym.make("CartPole-v1")), eval_freq=100, n_eval_episodes=2, log_path=str(tmp_path / "eval"), verbose=0
    )
    checkpoints = tmp_path / "checkpoints"
    checkpoint = CheckpointCallback(save_freq=150, save_path=str(checkpoints), name_prefix="ckpt")
    model = make_model("complementary-density", "CartPole-v1", seed=0)
    draws = learn(model, callback=[eval_callback, checkpoint])
    check_learned(model, draws)
    assert len(eval_callback.evaluations_results) == STEPS // 100
    assert sorted(p.name for p in checkpoints.iterdir()) == ["ckpt_150_steps.zip", "ckpt_300_steps.zip"]
    loaded = ComplementaryDQN.load(checkpoints / "ckpt_300_steps.zip", device="cpu")
    assert loaded.contribution == "density_ratio"
    assert loaded.extractor_kwargs == TINY_EXTRACTOR["extractor_kwargs"]
    # The schedule ran during learn(): the checkpoint of step 300 is written inside its rollout, before
    # the rollout's end fits the extractor again, so it holds the fit of step 200.
    assert loaded.last_fit_step == 200 and np.isfinite(loaded.extractor_auc)


@pytest.mark.parametrize("form", ["none", "single", "list", "callback_list", "function"])
def test_the_model_runs_the_extractor_schedule_whatever_the_callback(form, monkeypatch):
    """No callback is needed: every 100 env steps (TINY_EXTRACTOR) the model fits and re-scores, at a rollout's end."""
    counter = CountSteps()
    callback = {
        "none": None,
        "single": counter,
        "list": [counter],
        "callback_list": CallbackList([counter]),
        "function": lambda _locals, _globals: True,
    }[form]
    model = make_model("complementary-density", "CartPole-v1", seed=0)
    calls = {"fit": [], "refresh": []}
    fit, refresh = model.fit_extractor, model.refresh_scores
    monkeypatch.setattr(model, "fit_extractor", lambda: calls["fit"].append(model.num_timesteps) or fit())
    monkeypatch.setattr(model, "refresh_scores", lambda: calls["refresh"].append(model.num_timesteps) or refresh())
    model.learn(200, callback=callback)
    assert calls == {"fit": [100, 200], "refresh": [100, 200]}
    if form in ("single", "list", "callback_list"):
        assert counter.calls == 200


class StopAt(BaseCallback):
    def __init__(self, step: int):
        super().__init__()
        self.step = step

    def _on_step(self):
        return self.num_timesteps < self.step


def test_a_callback_that_stops_training_stops_the_schedule_too(monkeypatch):
    model = make_model("complementary-density", "CartPole-v1", seed=0)
    fits = []
    fit = model.fit_extractor
    monkeypatch.setattr(model, "fit_extractor", lambda: fits.append(model.num_timesteps) or fit())
    model.learn(400, callback=StopAt(150))
    assert model.num_timesteps == 150 and fits == [100]


def test_progress_bar_and_evaluate_policy():
    model = make_model("complementary-default", "CartPole-v1", seed=0)
    model.learn(200, progress_bar=True)
    vec_env = DummyVecEnv([lambda: Monitor(gym.make("CartPole-v1"))])
    vec_env.seed(3)
    returns, _ = evaluate_policy(model, vec_env, n_eval_episodes=3, return_episode_rewards=True)
    # The same three episodes by hand: evaluate_policy sees exactly what model.predict does.
    by_hand, env = [], gym.make("CartPole-v1")
    obs, _ = env.reset(seed=3)
    while len(by_hand) < 3:
        total, done = 0.0, False
        while not done:
            obs, reward, terminated, truncated, _ = env.step(int(model.predict(obs, deterministic=True)[0]))
            total += float(reward)
            done = terminated or truncated
        by_hand.append(total)
        obs, _ = env.reset()
    assert returns == by_hand
    prioritized = make_model("prioritized", "CartPole-v1", seed=0)
    prioritized.learn(200, progress_bar=True)
    assert np.isfinite(evaluate_policy(prioritized, Monitor(gym.make("CartPole-v1")), n_eval_episodes=2)[0])


# --------------------------------------------------------------------------- logging

COMPLEMENTARY_KEYS = {
    "complementary/extractor_loss",
    "complementary/roc_auc",
    "complementary/ess_fraction",
    "complementary/weight_p5",
    "complementary/weight_p95",
    "complementary/weight_max",
    "complementary/is_weight_mean",
    "complementary/is_weight_max",
    *(f"complementary/score_age_q{q}" for q in range(1, 5)),
}


@pytest.mark.parametrize("algo", ["complementary-density", "complementary-tree"])
def test_logger_records_complementary_keys(recording_logger, algo):
    logger, writer = recording_logger
    model = make_model(algo, "CartPole-v1", seed=0)
    model.set_logger(logger)
    model.learn(600, log_interval=1)
    missing = COMPLEMENTARY_KEYS - writer.keys()
    assert not missing, f"never logged: {sorted(missing)}"
    assert all(0 < v <= 1 for v in writer.values("complementary/ess_fraction"))
    assert all(np.isfinite(v) and v > 0 for v in writer.values("complementary/extractor_loss"))
    aucs = writer.values("complementary/roc_auc")  # NaN until the first fit, then the last fit's held-out AUC
    first_fit = int(np.argmax(np.isfinite(aucs)))
    assert np.isfinite(aucs[first_fit]) and np.all(np.isfinite(aucs[first_fit:])) and len(set(aucs[first_fit:])) > 1
    for mean, top in zip(
        writer.values("complementary/is_weight_mean"), writer.values("complementary/is_weight_max"), strict=True
    ):
        assert 0 < mean <= top
    cap = model.extractor_settings["cap"]  # the scores are self-normalised ratios (mean 1), capped
    for q in range(1, 5):
        assert all(0 < v <= cap for v in writer.values(f"complementary/score_age_q{q}"))


def test_the_default_logs_its_draws_and_no_extractor(recording_logger):
    """LaBER fits no extractor: it logs its pool's draws and its unnormalised IS weights ``mean(p) / p_i``."""
    logger, writer = recording_logger
    model = make_model("complementary-default", "CartPole-v1", seed=0)
    model.set_logger(logger)
    model.learn(600, log_interval=1)
    assert {"complementary/is_weight_mean", "complementary/is_weight_max", "complementary/beta"} <= writer.keys()
    assert writer.keys().isdisjoint({"complementary/extractor_loss"})
    assert set(writer.values("complementary/beta")) == {1.0}
    assert max(writer.values("complementary/is_weight_max")) > 1  # not divided by the batch maximum
    assert model.extractor is None


def test_prioritized_logs_is_weights(recording_logger):
    logger, writer = recording_logger
    model = make_model("prioritized", "CartPole-v1", seed=0)
    model.set_logger(logger)
    model.learn(STEPS, log_interval=1)
    assert {"complementary/is_weight_mean", "complementary/is_weight_max"} <= writer.keys()
    betas = writer.values("complementary/beta")
    assert betas and all(0.4 <= b <= 1 for b in betas) and betas == sorted(betas)  # annealed upwards


def test_tiny_settings_are_what_the_suite_assumes():
    """Guard for the helpers above: a change to them must not silently make the drop-in tests trivial."""
    assert TINY_DQN["learning_starts"] < STEPS // 2
    assert TINY_EXTRACTOR["extractor_kwargs"]["train_freq"] < STEPS // 2
