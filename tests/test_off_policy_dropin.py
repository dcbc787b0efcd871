"""
Drop-in for every weighted algorithm beyond DQN (SAC, TD3, DDPG, QR-DQN, TQC, CrossQ and the PER baselines):
a short learn, save/load, save_replay_buffer, two envs, bit-for-bit equality with the uniform parent,
the parent's own errors on what it does not support, and training with HER.
"""

import gymnasium as gym
import numpy as np
import pytest
import torch as th
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.envs import BitFlippingEnv
from stable_baselines3.her import HerReplayBuffer

import sb3_complementary
from sb3_complementary import ComplementaryHerReplayBuffer, ComplementaryReplayBuffer, PrioritizedHerReplayBuffer
from sb3_complementary.crossq.policies import MultiInputPolicy as CrossQMultiInputPolicy
from tests.algorithms import ACTOR_CRITIC, SPECS, STEPS, build, build_parent
from tests.replay_breakage import replay_one_transition_in_every_draw
from tests.replay_checks import check_draws_spread, check_is_weights, check_replay, check_trained_buffer, recorded_draws

ALGOS = list(SPECS)


def learn(model, steps=STEPS):
    """``model.learn(steps)``; every batch its train steps drew, recorded (tests/replay_checks.py)."""
    with recorded_draws(model) as draws:
        model.learn(steps)
    return draws


def check_learned(model, draws, steps=STEPS):
    """
    It ran, trained, kept a healthy tree where its draws read one (and none where they do not), (the
    density ratio) fitted the extractor, and predicts valid actions; and what a broken replay would
    fail (:func:`~tests.replay_checks.check_replay`): the
    gradient steps the configuration asks for, each on a drawn batch, spread over the buffer, with IS
    weights as the selection implies.
    """
    check_trained_buffer(model, steps)
    buffer = model.replay_buffer
    if model.extractor is not None:
        assert np.isfinite(model.extractor_auc), "the classifier was never fitted"
        assert model.extractor.net[-1].weight.abs().sum().item() > 0
        logits = model.extractor.numpy_logits(buffer.ratio_inputs(buffer.valid_indices()))
        assert np.all(np.isfinite(logits)) and logits.std() > 0
    env = model.get_env()
    actions, _ = model.predict(env.reset(), deterministic=True)
    assert len(actions) == env.num_envs
    assert all(env.action_space.contains(np.asarray(a, dtype=env.action_space.dtype)) for a in actions)
    check_replay(model, draws)


#: The batches each ``saved`` model's learn drew, by algorithm (for test_short_learn).
SAVED_DRAWS = {}


@pytest.fixture(scope="module", params=ALGOS)
def saved(request, tmp_path_factory):
    """One learned model per algorithm, saved with its replay buffer."""
    model = build(request.param, seed=0)
    SAVED_DRAWS[request.param] = learn(model)
    folder = tmp_path_factory.mktemp(request.param)
    model.save(folder / "model")
    model.save_replay_buffer(folder / "buffer")
    return request.param, model, folder


def test_short_learn(saved):
    name, model, _ = saved
    check_learned(model, SAVED_DRAWS[name])


#: A replay that repeats one transition (both public draws broken) fails check_learned's draw checks:
#: for the actor-critic default (uniform draws from the tree), PER, and a candidate pool (QR-DQN's default).
BROKEN_CASES = [
    ("ComplementarySAC", ["spread"]),
    ("PrioritizedSAC", ["spread", "is_weights"]),
    ("ComplementaryQRDQN", ["spread", "is_weights"]),
]


@pytest.mark.parametrize("name, failing", BROKEN_CASES, ids=[name for name, _ in BROKEN_CASES])
def test_check_learned_fails_for_a_broken_replay(name, failing, monkeypatch):
    calls = replay_one_transition_in_every_draw(monkeypatch)
    model = build(name, seed=0)
    draws = learn(model)
    assert calls[0] > 0
    checks = {"spread": check_draws_spread, "is_weights": check_is_weights}
    for check in failing:
        with pytest.raises(AssertionError):
            checks[check](model, draws)
    with pytest.raises(AssertionError):
        check_learned(model, draws)


def test_save_load_same_predictions_and_scores(saved):
    name, model, folder = saved
    loaded = SPECS[name].cls.load(folder / "model.zip", device="cpu")
    obs = model.replay_buffer.observations[:64, 0]
    np.testing.assert_array_equal(loaded.predict(obs, deterministic=True)[0], model.predict(obs, deterministic=True)[0])
    for key, value in model.policy.state_dict().items():
        assert th.equal(loaded.policy.state_dict()[key], value), key
    knobs = ("alpha", "epsilon", "uniform_fraction", "score_floor")
    if SPECS[name].complementary:
        knobs += ("contribution", "candidate_pool", "extractor_kwargs")
    else:
        knobs += ("beta",)
    if model.extractor is not None:
        knobs += ("extractor_auc",)
    for knob in knobs:
        got, want = getattr(loaded, knob), getattr(model, knob)
        assert got == want or (knob == "extractor_auc" and np.isnan(got) and np.isnan(want)), knob  # NaN: never fitted
    if getattr(model, "contribution", None) == "density_ratio":
        inputs = model.replay_buffer.ratio_inputs(model.replay_buffer.valid_indices())
        logits = model.extractor.numpy_logits(inputs)
        assert np.std(logits) > 0
        np.testing.assert_array_equal(loaded.extractor.numpy_logits(inputs), logits)


@pytest.mark.parametrize("name", [name for name in ALGOS if SPECS[name].complementary])
def test_the_defaults_select_as_documented_and_round_trip(name, tmp_path):
    """
    At its constructor defaults. The DQN family: LaBER, fresh |TD| on a pool of 4 with unnormalised IS
    weights, every batch from a pool. The actor-critic classes: LaBER's knobs at ``alpha=0``, so every
    batch is SB3's uniform draw with IS weights 1 (``alpha=1.0`` turns LaBER on). Neither builds an
    extractor or a sum tree.
    """
    spec = SPECS[name]
    actor_critic = name in ACTOR_CRITIC
    alpha = 0.0 if actor_critic else 1.0
    model = spec.cls("MlpPolicy", spec.env_id, **spec.parent_kwargs(seed=0))  # a copy: SB3 writes into policy_kwargs
    assert (model.contribution, model.candidate_pool, model.alpha) == ("laber", 4, alpha)
    draws = learn(model, 3 * spec.kwargs["buffer_size"] // 5 + 100)
    assert model.extractor is None and model.replay_buffer.tree is None
    assert draws and all((draw.candidates is None) == actor_critic for draw in draws)
    if actor_critic:  # SB3's uniform draws, IS weights 1
        assert all(np.all(draw.batch.raw_weights == 1.0) for draw in draws)
    else:  # LaBER: the IS weights mean(p) / p_i (above 1 for rare picks)
        assert model.replay_buffer.beta == 1.0
        assert max(float((1 / draw.rates).max()) for draw in draws) > 1
    model.save(tmp_path / "model")
    loaded = spec.cls.load(tmp_path / "model.zip", device="cpu")
    assert (loaded.contribution, loaded.candidate_pool, loaded.alpha) == ("laber", 4, alpha)
    assert loaded.extractor is None


def test_replay_buffer_round_trip_and_resume(saved):
    name, model, folder = saved
    loaded = SPECS[name].cls.load(folder / "model.zip", env=model.get_env(), device="cpu")
    loaded.load_replay_buffer(folder / "buffer.pkl")
    original, restored = model.replay_buffer, loaded.replay_buffer
    assert isinstance(restored, ComplementaryReplayBuffer)
    assert (restored.pos, restored.full, restored.n_added) == (original.pos, original.full, original.n_added)
    np.testing.assert_array_equal(restored.actions, original.actions)
    np.testing.assert_array_equal(restored.terminals, original.terminals)
    np.testing.assert_array_equal(restored.task_ids, original.task_ids)
    assert (restored.tree is None) == (original.tree is None)  # a tree travels only where the draws read one
    for buffer in (original, restored):
        buffer.sample_weighted(1)  # builds the tree from the stored scores, or applies pending initial scores
    np.testing.assert_array_equal(restored.scores, original.scores)
    np.testing.assert_array_equal(restored.tree.nodes, original.tree.nodes)
    np.random.seed(5)
    a = original.sample_weighted(16)
    np.random.seed(5)
    b = restored.sample_weighted(16)
    np.testing.assert_array_equal(a.indices, b.indices)
    np.testing.assert_array_equal(a.raw_weights, b.raw_weights)
    loaded.learn(50, reset_num_timesteps=False)
    new_steps = loaded.num_timesteps - model.num_timesteps
    assert new_steps >= 50 and loaded.replay_buffer.n_added == original.n_added + new_steps


@pytest.mark.parametrize("name", ALGOS)
def test_two_envs(name):
    env = make_vec_env(SPECS[name].env_id, n_envs=2, seed=0)
    model = build(name, env=env, seed=0)
    assert model.replay_buffer.n_envs == 2
    draws = learn(model)
    check_learned(model, draws)
    envs = np.concatenate([model.replay_buffer.sample_weighted(32).indices % 2 for _ in range(4)])
    assert set(envs.tolist()) == {0, 1}


def learned_state(model, steps=STEPS):
    model.learn(steps)
    state = {f"policy.{k}": v for k, v in model.policy.state_dict().items()}
    if getattr(model, "log_ent_coef", None) is not None:
        state["log_ent_coef"] = model.log_ent_coef.detach()
    return state, [info["r"] for info in model.ep_info_buffer]


@pytest.mark.slow  # two learns per algorithm
@pytest.mark.parametrize("name", ALGOS)
def test_uniform_replay_trains_bit_for_bit_like_the_parent(name):
    """
    All IS weights equal (uniform_fraction=1): every parameter matches the uniform parent's exactly.
    Through the sum tree, whose uniform share draws with SB3's own RNG calls: ComplementaryQRDQN's
    default candidate pool draws its candidates first, so it runs the density ratio's tree path here
    (the actor-critic classes have no pool by default). The extractor is fitted during the run all the same.
    """
    expected, parent_rewards = learned_state(build_parent(name, seed=3, gradient_steps=2))
    tree = {"contribution": "density_ratio", "candidate_pool": 0} if SPECS[name].complementary else {}
    got, rewards = learned_state(build(name, seed=3, gradient_steps=2, uniform_fraction=1.0, **tree))
    assert rewards == parent_rewards
    assert expected.keys() == got.keys()
    for key in expected:
        assert th.equal(expected[key], got[key]), f"{key}: max diff {(expected[key] - got[key]).abs().max().item()}"


@pytest.mark.parametrize("name", ["ComplementarySAC", "ComplementaryQRDQN"])
def test_bit_for_bit_check_detects_a_different_update(name):
    """Sanity check of the test above: one sample more per batch is caught."""
    expected, _ = learned_state(build_parent(name, seed=3), steps=200)
    got, _ = learned_state(build(name, seed=3, uniform_fraction=1.0, batch_size=17), steps=200)
    assert any(not th.equal(expected[key], got[key]) for key in expected)


@pytest.mark.parametrize("name", ALGOS)
def test_constructor_and_policy_aliases_are_the_parents(name):
    spec = SPECS[name]
    # The parent's, plus (CrossQ) this package's MultiInputPolicy, which sb3-contrib's CrossQ lacks.
    extra = {"MultiInputPolicy": CrossQMultiInputPolicy} if name == "ComplementaryCrossQ" else {}
    assert spec.cls.policy_aliases == {**spec.parent.policy_aliases, **extra}
    assert isinstance(build(name), spec.parent)
    # Positional arguments pass through as for the parent (learning_rate, buffer_size, learning_starts, batch_size).
    ours = spec.cls("MlpPolicy", spec.env_id, 5e-4, 300, 10, 16, device="cpu")
    parent = spec.parent("MlpPolicy", spec.env_id, 5e-4, 300, 10, 16, device="cpu")
    for attr in ("learning_rate", "buffer_size", "learning_starts", "batch_size"):
        assert getattr(ours, attr) == getattr(parent, attr)


def _parent_error(build_it):
    with pytest.raises(Exception) as info:
        build_it()
    return info.value


@pytest.mark.parametrize("name", ALGOS)
def test_unsupported_action_space_fails_with_the_parents_error(name):
    spec = SPECS[name]
    wrong_env = "CartPole-v1" if spec.env_id == "Pendulum-v1" else "Pendulum-v1"
    expected = _parent_error(lambda: spec.parent("MlpPolicy", wrong_env, device="cpu"))
    with pytest.raises(type(expected)) as info:
        spec.cls("MlpPolicy", wrong_env, device="cpu")
    assert str(info.value) == str(expected)


@pytest.mark.parametrize("name", ["ComplementaryCrossQ", "ComplementarySAC"])
def test_unsupported_policy_fails_with_the_parents_error(name):
    spec = SPECS[name]
    policy = "CnnPolicy" if name == "ComplementaryCrossQ" else "NoSuchPolicy"
    expected = _parent_error(lambda: spec.parent(policy, spec.env_id, device="cpu"))
    with pytest.raises(type(expected)) as info:
        spec.cls(policy, spec.env_id, device="cpu")
    assert str(info.value) == str(expected)


@pytest.mark.parametrize("name", ["ComplementarySAC", "ComplementaryQRDQN"])
def test_dict_observations_with_mlp_policy_fail_with_the_parents_error(name):
    spec = SPECS[name]
    continuous = spec.env_id == "Pendulum-v1"
    expected = _parent_error(lambda: spec.parent("MlpPolicy", BitFlippingEnv(continuous=continuous), device="cpu"))
    with pytest.raises(type(expected)) as info:
        spec.cls("MlpPolicy", BitFlippingEnv(continuous=continuous), device="cpu")
    assert str(info.value) == str(expected)


def her_model(name, n_bits=4, **overrides):
    spec = SPECS[name]
    env = BitFlippingEnv(n_bits=n_bits, continuous=spec.env_id == "Pendulum-v1")
    return spec.cls("MultiInputPolicy", env, **spec.model_kwargs(learning_starts=20, **overrides))


@pytest.mark.parametrize("route", ["sb3-class", "our-class"])
@pytest.mark.parametrize("name", ALGOS)
def test_trains_with_her(name, route):
    """
    SB3's HerReplayBuffer stands for the weighted HER buffer of the algorithm's kind; that buffer
    can also be passed directly, with SB3's HER arguments. CrossQ with this package's MultiInputPolicy.
    """
    her_class = ComplementaryHerReplayBuffer if SPECS[name].complementary else PrioritizedHerReplayBuffer
    model = her_model(
        name,
        replay_buffer_class=HerReplayBuffer if route == "sb3-class" else her_class,
        replay_buffer_kwargs={"n_sampled_goal": 2, "goal_selection_strategy": "final"},
    )
    model.learn(STEPS)
    buffer = model.replay_buffer
    assert isinstance(buffer, HerReplayBuffer) and type(buffer) is her_class
    assert buffer.her_ratio == pytest.approx(2 / 3) and buffer.goal_selection_strategy.name == "FINAL"
    assert model._n_updates > 0
    if not SPECS[name].complementary:  # PER's feedback (update_scores) reached the stored transitions' scores
        assert buffer.scores[buffer.valid_indices()].std() > 0


@pytest.mark.parametrize("name", [name for name in ALGOS if SPECS[name].complementary])
def test_draw_time_selection_with_her(name):
    """A candidate pool of relabelled transitions, scored by their fresh |TD| (each algorithm's own hook)."""
    model = her_model(
        name, replay_buffer_class=HerReplayBuffer, candidate_pool=2, contribution="fresh_td", alpha=1.0
    )  # alpha set: the actor-critic classes draw uniformly by default
    model.learn(STEPS // 2)
    assert model._n_updates > 0 and model.sampling_ess_fraction() < 1.0


def test_crossq_multi_input_policy_saves_and_loads(tmp_path):
    """This package's CrossQ MultiInputPolicy (sb3-contrib has none) round-trips like the MlpPolicy."""
    model = her_model("ComplementaryCrossQ", replay_buffer_class=HerReplayBuffer)
    model.learn(STEPS // 2)
    model.save(tmp_path / "model")
    loaded = SPECS["ComplementaryCrossQ"].cls.load(tmp_path / "model", env=model.get_env(), device="cpu")
    assert type(loaded.policy) is CrossQMultiInputPolicy
    obs = model.get_env().reset()
    np.testing.assert_array_equal(loaded.predict(obs, deterministic=True)[0], model.predict(obs, deterministic=True)[0])


def _sb3_her_error(env, **kwargs):
    """What SB3's own HerReplayBuffer raises for this env's spaces."""
    vec_env = make_vec_env(lambda: env)
    return _parent_error(lambda: HerReplayBuffer(100, env.observation_space, env.action_space, env=vec_env, **kwargs))


@pytest.mark.parametrize("name", ALGOS)
def test_her_on_a_non_goal_env_or_with_optimize_memory_usage_gets_sb3s_error(name):
    """SB3's own error, raised from SB3's code (not from inside our buffer), as the parent raises it."""
    spec = SPECS[name]
    goal_env = BitFlippingEnv(n_bits=4, continuous=spec.env_id == "Pendulum-v1")
    cases = [(gym.make(spec.env_id), {}), (goal_env, {"optimize_memory_usage": True})]
    for env, kwargs in cases:
        expected = _sb3_her_error(env, **kwargs)
        settings = {"replay_buffer_class": HerReplayBuffer, "device": "cpu", **kwargs}
        if name != "ComplementaryCrossQ":  # sb3-contrib's CrossQ fails earlier: it has no MultiInputPolicy
            parent = _parent_error(lambda env=env, settings=settings: spec.parent("MultiInputPolicy", env, **settings))
            assert (type(parent), str(parent)) == (type(expected), str(expected))
        with pytest.raises(type(expected)) as info:
            spec.cls("MultiInputPolicy", env, **settings)
        assert str(info.value) == str(expected)
        assert "stable_baselines3" in info.traceback[-1].path.parts, info.traceback[-1].path


@pytest.mark.parametrize("name", ALGOS)
def test_bad_knob_fails_as_in_complementary_dqn(name):
    with pytest.raises(ValueError, match=r"alpha.*-1"):
        SPECS[name].cls("MlpPolicy", SPECS[name].env_id, alpha=-1, device="cpu")
    if SPECS[name].complementary:
        with pytest.raises(ValueError, match=r"extractor_kwargs\['gradient_steps'\].*got 0"):
            SPECS[name].cls("MlpPolicy", SPECS[name].env_id, extractor_kwargs={"gradient_steps": 0}, device="cpu")


def test_everything_is_exported():
    names = [
        *(f"Complementary{a}" for a in ("DQN", "SAC", "TD3", "DDPG", "QRDQN", "TQC", "CrossQ")),
        *(f"Prioritized{a}" for a in ("DQN", "SAC", "TD3", "QRDQN")),
    ]
    for name in names:
        assert name in sb3_complementary.__all__ and hasattr(sb3_complementary, name), name
    assert set(SPECS) <= set(sb3_complementary.__all__)


def test_dict_observations_with_multi_input_policy_learn():
    """MultiInputPolicy on a Dict env goes through the Dict buffer for an actor-critic too."""
    spec = SPECS["ComplementarySAC"]
    env = BitFlippingEnv(n_bits=4, continuous=True, max_steps=20)
    model = spec.cls("MultiInputPolicy", env, **spec.model_kwargs(contribution="density_ratio", alpha=1.0))
    model.learn(250)
    assert model._n_updates > 0 and np.isfinite(model.extractor_auc)  # the classifier fits on the flattened Dict


def test_tiny_settings_are_what_the_suite_assumes():
    for spec in SPECS.values():
        assert spec.kwargs["learning_starts"] < STEPS // 2
    assert gym.spec("Pendulum-v1").max_episode_steps == 200
