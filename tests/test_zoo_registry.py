"""The algorithm registry: our algorithms in rl-zoo3's lookup tables, their Optuna search space, inference loading."""

import inspect
import math

import optuna
import pytest
import rl_zoo3
from rl_zoo3.hyperparams_opt import HYPERPARAMS_CONVERTER, HYPERPARAMS_SAMPLER, sample_dqn_params
from rl_zoo3.utils import ALGOS
from stable_baselines3 import DQN

from sb3_complementary import (
    ComplementaryCrossQ,
    ComplementaryDDPG,
    ComplementaryDQN,
    ComplementaryQRDQN,
    ComplementarySAC,
    ComplementaryTD3,
    ComplementaryTQC,
    PrioritizedDQN,
    PrioritizedQRDQN,
    PrioritizedSAC,
    PrioritizedTD3,
)
from sb3_complementary.common.extractor_settings import EXTRACTOR_DEFAULTS
from sb3_complementary.zoo import ZOO_ALGORITHMS, register_algorithms
from sb3_complementary.zoo.inference import INFERENCE_LOAD_KWARGS, inference_algorithms
from sb3_complementary.zoo.registry import zoo_algorithm
from sb3_complementary.zoo.search_space import extend_sampler

#: Our knobs each algorithm must add to its parent's search space (the constructor's keyword arguments).
COMPLEMENTARY_KNOBS = {"alpha", "uniform_fraction", "extractor_kwargs"}
REPLAY_KNOBS = {"alpha", "uniform_fraction"}
EXPECTED_KNOBS = {
    entry.name: COMPLEMENTARY_KNOBS if entry.name.startswith("complementary_") else REPLAY_KNOBS
    for entry in ZOO_ALGORITHMS
}
#: The same knobs as the trial stores them (flat): extractor_kwargs' two sampled keys under their own names.
EXTRACTOR_PARAMS = {"extractor_lr_ratio": "lr_ratio", "extractor_refresh_interval": "refresh_interval"}
EXPECTED_PARAMS = {
    name: (knobs - {"extractor_kwargs"}) | (set(EXTRACTOR_PARAMS) if "extractor_kwargs" in knobs else set())
    for name, knobs in EXPECTED_KNOBS.items()
}
#: Algorithms whose parent has an rl-zoo3 search space (all but crossq).
TUNABLE = sorted(entry.name for entry in ZOO_ALGORITHMS if entry.parent in HYPERPARAMS_CONVERTER)
#: Sampled values that are objects without value equality (action noise, activation classes in policy_kwargs).
UNCOMPARABLE = {"policy_kwargs", "action_noise"}
ARGS = {"using_her_replay_buffer": False, "her_kwargs": {}}
SMALL = {"buffer_size": 500, "learning_starts": 20, "batch_size": 16, "train_freq": 4, "device": "cpu"}


def _parent(name: str) -> str:
    return next(entry.parent for entry in ZOO_ALGORITHMS if entry.name == name)


def _trial(seed: int) -> optuna.Trial:
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=seed))
    return study.ask()


def test_registration_fills_every_rl_zoo3_table() -> None:
    register_algorithms()
    register_algorithms()  # idempotent
    assert {entry.name: (entry.algorithm, entry.parent) for entry in ZOO_ALGORITHMS} == {
        "complementary_dqn": (ComplementaryDQN, "dqn"),
        "prioritized_dqn": (PrioritizedDQN, "dqn"),
        "complementary_qrdqn": (ComplementaryQRDQN, "qrdqn"),
        "prioritized_qrdqn": (PrioritizedQRDQN, "qrdqn"),
        "complementary_sac": (ComplementarySAC, "sac"),
        "prioritized_sac": (PrioritizedSAC, "sac"),
        "complementary_td3": (ComplementaryTD3, "td3"),
        "prioritized_td3": (PrioritizedTD3, "td3"),
        "complementary_ddpg": (ComplementaryDDPG, "ddpg"),
        "complementary_tqc": (ComplementaryTQC, "tqc"),
        "complementary_crossq": (ComplementaryCrossQ, "crossq"),
    }
    assert rl_zoo3.ALGOS is ALGOS  # train/enjoy/record_video/exp_manager all read this one dict
    assert ALGOS["dqn"] is DQN  # the zoo's own algorithms are untouched
    for entry in ZOO_ALGORITHMS:
        assert ALGOS[entry.name] is entry.algorithm
        assert issubclass(entry.algorithm, ALGOS[entry.parent])
        assert entry.name in HYPERPARAMS_SAMPLER
        if entry.name in TUNABLE:  # the registered converter is the parent's on the parent's own parameters
            trial = _trial(0)
            HYPERPARAMS_SAMPLER[entry.parent](trial, 1, 1, dict(ARGS))
            ours = HYPERPARAMS_CONVERTER[entry.name](trial.params)
            parents = HYPERPARAMS_CONVERTER[entry.parent](trial.params)
            assert ours.keys() == parents.keys(), entry.name
            assert {k: v for k, v in ours.items() if k not in UNCOMPARABLE} == {
                k: v for k, v in parents.items() if k not in UNCOMPARABLE
            }, entry.name
        assert entry.hyperparams_file.is_file()
    assert zoo_algorithm("dqn") is None


def test_registration_refuses_a_name_clash(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(ALGOS, "complementary_dqn", DQN)
    with pytest.raises(ValueError, match="already has an algorithm named 'complementary_dqn'"):
        register_algorithms()


@pytest.mark.parametrize("name", TUNABLE)
def test_search_space_is_the_parents_plus_our_knobs(name: str) -> None:
    register_algorithms()
    parent_sampler = HYPERPARAMS_SAMPLER[_parent(name)]
    ours = _trial(0)
    params = HYPERPARAMS_SAMPLER[name](ours, 1, 1, dict(ARGS))
    parent = _trial(0)
    parent_params = parent_sampler(parent, 1, 1, dict(ARGS))
    assert set(params) == set(parent_params) | EXPECTED_KNOBS[name]
    assert set(ours.params) == set(parent.params) | EXPECTED_PARAMS[name]
    # The parent's part is sampled exactly as rl-zoo3 samples it (same seed, same order).
    assert {k: v for k, v in params.items() if k not in UNCOMPARABLE} == {
        **{k: v for k, v in parent_params.items() if k not in UNCOMPARABLE},
        **{k: params[k] for k in EXPECTED_KNOBS[name]},
    }


@pytest.mark.parametrize("name", TUNABLE)
def test_constructor_defaults_lie_inside_the_search_space(name: str) -> None:
    register_algorithms()
    algorithm = ALGOS[name]
    defaults = {
        key: p.default for key, p in inspect.signature(algorithm).parameters.items() if key in EXPECTED_KNOBS[name]
    }
    assert set(defaults) == EXPECTED_KNOBS[name]
    if "extractor_kwargs" in defaults:  # None: every key at its default; the sampled keys' defaults
        assert defaults.pop("extractor_kwargs") is None
        defaults.update({param: EXTRACTOR_DEFAULTS[key] for param, key in EXTRACTOR_PARAMS.items()})
    trial = _trial(1)
    HYPERPARAMS_SAMPLER[name](trial, 1, 1, dict(ARGS))
    for knob, default in defaults.items():
        distribution = trial.distributions[knob]
        if isinstance(distribution, optuna.distributions.CategoricalDistribution):
            assert default in distribution.choices, knob
        else:
            assert distribution.low <= default <= distribution.high, knob


@pytest.mark.parametrize("seed", range(4))
def test_sampled_trials_build_models(seed: int) -> None:
    """Every sample is a valid configuration: the model takes it and holds the sampled knobs."""
    register_algorithms()
    for entry in ZOO_ALGORITHMS:
        if entry.name not in TUNABLE or (entry.parent != "dqn" and seed > 0):
            continue  # the DQN family on four seeds; each other algorithm on one, to keep the test fast
        sampled = HYPERPARAMS_SAMPLER[entry.name](_trial(seed), 1, 1, dict(ARGS))
        env_id = "CartPole-v1" if entry.parent in ("dqn", "qrdqn") else "Pendulum-v1"
        model = entry.algorithm("MlpPolicy", env_id, **{**sampled, **SMALL})
        for knob in EXPECTED_KNOBS[entry.name]:
            value = getattr(model, knob)
            assert value == sampled[knob] or (isinstance(value, float) and math.isclose(value, sampled[knob]))


@pytest.mark.parametrize("name", ["complementary_dqn", "complementary_sac"])
def test_a_stored_trial_converts_back_to_the_sampled_knobs(name: str) -> None:
    """``--trial-id``: the registered converter turns a stored (flat) trial back into the sampled kwargs."""
    register_algorithms()
    trial = _trial(0)
    sampled = HYPERPARAMS_SAMPLER[name](trial, 1, 1, dict(ARGS))
    converted = HYPERPARAMS_CONVERTER[name](trial.params)
    assert {k: converted.get(k) for k in EXPECTED_KNOBS[name]} == {k: sampled[k] for k in EXPECTED_KNOBS[name]}
    entry = next(e for e in ZOO_ALGORITHMS if e.name == name)
    entry.algorithm("MlpPolicy", "CartPole-v1" if entry.parent == "dqn" else "Pendulum-v1", **{**converted, **SMALL})


def test_a_stored_trial_of_a_prioritized_algorithm_converts_back():
    """The PER classes' knobs are flat: the parent's converter passes them through."""
    register_algorithms()
    trial = _trial(0)
    sampled = HYPERPARAMS_SAMPLER["prioritized_dqn"](trial, 1, 1, dict(ARGS))
    converted = HYPERPARAMS_CONVERTER["prioritized_dqn"](trial.params)
    assert {k: converted[k] for k in REPLAY_KNOBS} == {k: sampled[k] for k in REPLAY_KNOBS}
    ALGOS["prioritized_dqn"]("MlpPolicy", "CartPole-v1", **{**converted, **SMALL})


def test_extend_sampler_refuses_to_resample_a_parent_parameter() -> None:
    def knobs(trial: optuna.Trial) -> dict:
        return {"learning_rate": trial.suggest_float("lr2", 0.1, 0.2)}

    sampler = extend_sampler(sample_dqn_params, knobs)
    with pytest.raises(ValueError, match="learning_rate"):
        sampler(_trial(0), 0, 1, {"using_her_replay_buffer": False, "her_kwargs": {}})


def test_enjoy_loads_our_models_without_a_replay_buffer(tmp_path) -> None:
    register_algorithms()
    model = ComplementaryDQN("MlpPolicy", "CartPole-v1", **SMALL)
    model.save(tmp_path / "model.zip")
    with inference_algorithms():
        loader = ALGOS["complementary_dqn"]
        assert loader is not ComplementaryDQN and issubclass(loader, ComplementaryDQN)
        loaded = loader.load(
            tmp_path / "model.zip", custom_objects={"learning_rate": 0.0, "lr_schedule": lambda _: 0.0}
        )
    assert ALGOS["complementary_dqn"] is ComplementaryDQN  # restored
    assert type(loaded) is ComplementaryDQN
    assert loaded.replay_buffer.buffer_size == INFERENCE_LOAD_KWARGS["buffer_size"]
    action, _ = loaded.predict(loaded.observation_space.sample(), deterministic=True)
    assert loaded.action_space.contains(int(action))


def test_parent_without_search_space_trains_but_refuses_optimize(monkeypatch: pytest.MonkeyPatch) -> None:
    """An algorithm whose rl-zoo3 parent has no sampler (crossq) is still registered for train/enjoy."""
    from sb3_complementary.zoo import registry

    register_algorithms()
    assert ALGOS["complementary_crossq"] is ComplementaryCrossQ
    assert "complementary_crossq" not in HYPERPARAMS_CONVERTER
    with pytest.raises(ValueError, match=r"-optimize is not available for complementary_crossq.*'crossq'"):
        HYPERPARAMS_SAMPLER["complementary_crossq"](_trial(0), 1, 1, {})

    extra = registry.ZooAlgorithm("complementary_test", ComplementaryDQN, parent="crossq", knobs=lambda trial: {})
    monkeypatch.setattr(registry, "ZOO_ALGORITHMS", (*registry.ZOO_ALGORITHMS, extra))
    try:
        register_algorithms()
        assert ALGOS["complementary_test"] is ComplementaryDQN
        assert "complementary_test" not in HYPERPARAMS_CONVERTER
        with pytest.raises(ValueError, match="no search space for its parent 'crossq'"):
            HYPERPARAMS_SAMPLER["complementary_test"](_trial(0), 0, 1, {})
    finally:
        ALGOS.pop("complementary_test", None)
        HYPERPARAMS_SAMPLER.pop("complementary_test", None)
