"""Packaged hyperparameter files, user conf files, and the checks on bad hyperparameter input."""

import argparse
import importlib.util
from pathlib import Path
from typing import Any

import pytest
import rl_zoo3
import yaml
from rl_zoo3.utils import ALGOS
from stable_baselines3.her import HerReplayBuffer

from sb3_complementary import ComplementaryDQN
from sb3_complementary.common.her_replay_buffer import ComplementaryHerReplayBuffer, PrioritizedHerReplayBuffer
from sb3_complementary.zoo import BIT_FLIPPING_IDS, ZOO_ALGORITHMS, register_algorithms
from sb3_complementary.zoo.experiment import ZooExperimentManager
from sb3_complementary.zoo.hyperparams import (
    ZOO_EXPERIMENT_KEYS,
    HyperparamsError,
    check_keys,
    constructor_parameters,
    load_hyperparams_file,
    select_entry,
)
from sb3_complementary.zoo.storage import optuna_storage

ZOO_DIR = Path(rl_zoo3.__file__).parent / "hyperparams"
#: rl-zoo3 parents with discrete actions; the others are continuous-action algorithms.
DISCRETE_PARENTS = frozenset({"dqn", "qrdqn"})
#: Env each fallback entry is exercised on (an env without an entry of its own), by action space.
ENTRY_ENV = {
    True: {"default": "CartPole-v0", "atari": "PongNoFrameskip-v4"},
    False: {"default": "BipedalWalkerHardcore-v3"},
}
#: The one entry per algorithm that learns a few steps (the DQN family learns every entry, as before).
LEARN_ENTRY = {"qrdqn": "CartPole-v1"}
LEARN_ENTRY_CONTINUOUS = "Pendulum-v1"
HAS_ALE = importlib.util.find_spec("ale_py") is not None
HAS_BOX2D = importlib.util.find_spec("Box2D") is not None
HAS_MUJOCO = importlib.util.find_spec("mujoco") is not None
HAS_ROBOTICS = importlib.util.find_spec("gymnasium_robotics") is not None
#: Goal-conditioned entries packaged under a newer env id than rl-zoo3's key for the same entry.
ZOO_GOAL_KEYS = {"FetchReach-v4": "FetchReach-v1"}
BOX2D_ENVS = frozenset({"LunarLander-v3", "LunarLanderContinuous-v3", "BipedalWalker-v3", "BipedalWalkerHardcore-v3"})


def _parent(name: str) -> str:
    return next(e for e in ZOO_ALGORITHMS if e.name == name).parent


def _own_knobs(algorithm: type, parent: str = "dqn") -> set[str]:
    """Constructor parameters the algorithm adds to its rl-zoo3 parent's."""
    return set(constructor_parameters(algorithm)) - set(constructor_parameters(ALGOS[parent]))


def _table(name: str) -> dict[str, Any]:
    register_algorithms()
    return load_hyperparams_file(str(next(e for e in ZOO_ALGORITHMS if e.name == name).hyperparams_file))


def _entry_env(name: str, key: str) -> str:
    return ENTRY_ENV[_parent(name) in DISCRETE_PARENTS].get(key, key)


def _missing_engine(env_id: str, key: str) -> str | None:
    """Why the env cannot be built here, or None."""
    if key == "atari" and not HAS_ALE:
        return "ale-py is not installed: no Atari env to build the 'atari' entry on"
    if env_id in BOX2D_ENVS and not HAS_BOX2D:
        return f"Box2D is not installed: cannot build {env_id}"
    if env_id.endswith("-v4") and not HAS_MUJOCO:
        return f"mujoco is not installed: cannot build {env_id}"
    if env_id in ZOO_GOAL_KEYS:
        if not HAS_ROBOTICS:
            return f"gymnasium-robotics is not installed: cannot build {env_id}"
        importlib.import_module("gymnasium_robotics")  # registers the id, as --gym-packages does
    return None


def manager(tmp_path: Path, algo: str, env_id: str, **kwargs: Any) -> ZooExperimentManager:
    """A ZooExperimentManager as rl_zoo3.train builds it, without evaluation, logging into tmp_path."""
    register_algorithms()
    return ZooExperimentManager(
        argparse.Namespace(conf_file=kwargs.get("config")),
        algo,
        env_id,
        str(tmp_path),
        n_timesteps=kwargs.pop("n_timesteps", 0),
        eval_freq=-1,
        seed=0,
        log_interval=-2,  # no logging (rl-zoo3's constructor default 0 means "every 0 episodes": a modulo by zero)
        verbose=0,
        device="cpu",
        **kwargs,
    )


ENTRIES = [(entry.name, key) for entry in ZOO_ALGORITHMS for key in _table(entry.name)]


@pytest.mark.parametrize("name", [entry.name for entry in ZOO_ALGORITHMS])
def test_packaged_entries_are_rl_zoo3_parent_entries_plus_our_knobs(name: str) -> None:
    table = _table(name)
    parent = _parent(name)
    with open(ZOO_DIR / f"{parent}.yml") as file:
        zoo = yaml.safe_load(file)
    ours = set(table) & set(BIT_FLIPPING_IDS)  # the goal-conditioned (HER) entries rl-zoo3 does not have
    if parent == "dqn":
        assert ours == set(BIT_FLIPPING_IDS)
        assert set(table) - ours == set(zoo)  # CartPole-v1, Acrobot-v1, MountainCar-v0, LunarLander-v3, atari, default
    assert "default" in table and {ZOO_GOAL_KEYS.get(key, key) for key in table} - ours <= set(zoo)
    expected = {"CartPole-v1", "atari"} if parent in DISCRETE_PARENTS else {"Pendulum-v1", "BipedalWalker-v3"}
    assert expected <= set(table)
    knobs = _own_knobs(ALGOS[name], parent)
    for key, entry in table.items():
        if key in ours:
            assert entry["replay_buffer_class"] == "HerReplayBuffer" and entry["policy"] == "MultiInputPolicy"
        else:
            zoo_entry = zoo[ZOO_GOAL_KEYS.get(key, key)]
            assert {k: v for k, v in entry.items() if k not in knobs} == zoo_entry, f"{name}.yml [{key}] drifted"
        missing = knobs - set(entry)
        assert not missing, f"{name}.yml [{key}] does not list the constructor's knobs {sorted(missing)}: add them"


@pytest.mark.parametrize("name", [entry.name for entry in ZOO_ALGORITHMS])
def test_packaged_knobs_equal_the_constructor_defaults(name: str) -> None:
    """The YAML spells the knobs out; they must not drift from the constructor's defaults."""
    register_algorithms()
    algorithm = ALGOS[name]
    parent = _parent(name)
    env_id = "CartPole-v1" if parent in DISCRETE_PARENTS else "Pendulum-v1"
    small = {"buffer_size": 100, "device": "cpu", "policy_kwargs": {"net_arch": [8]}}
    baseline = algorithm("MlpPolicy", env_id, **small)
    checked: list[dict[str, Any]] = []
    for key, entry in _table(name).items():
        knobs = {k: v for k, v in entry.items() if k in _own_knobs(algorithm, parent)}
        if knobs in checked:
            continue  # the same merged knobs: one model per distinct set keeps the test fast
        checked.append(knobs)
        model = algorithm("MlpPolicy", env_id, **small, **knobs)
        for knob in knobs:
            if knob == "extractor_kwargs":  # the YAML spells every key out; the constructor's default is None
                assert model.extractor_settings == baseline.extractor_settings, f"{name}.yml [{key}] {knob}"
            else:
                assert getattr(model, knob) == getattr(baseline, knob), f"{name}.yml [{key}] {knob}"


@pytest.mark.parametrize(("name", "key"), ENTRIES, ids=[f"{n}-{k}" for n, k in ENTRIES])
def test_every_packaged_entry_builds_and_learns(tmp_path: Path, name: str, key: str) -> None:
    """Every entry builds its model; the DQN family learns on every entry, the others on one entry each."""
    env_id = _entry_env(name, key)
    missing = _missing_engine(env_id, key)
    if missing:
        pytest.skip(missing)
    parent = _parent(name)
    complementary = name.startswith("complementary_")
    if parent == "dqn":
        learn, n_timesteps = True, 300
        overrides: dict[str, Any] = {"learning_starts": 50}
        if key == "atari":
            overrides["buffer_size"] = 500  # the entry's 100k frames would need gigabytes
        if complementary:
            overrides["extractor_kwargs"] = {"train_freq": 100, "refresh_interval": 100}
    else:
        learn = key == LEARN_ENTRY.get(parent, LEARN_ENTRY_CONTINUOUS) or key in ZOO_GOAL_KEYS
        n_timesteps = 50
        # Tuned buffers of 1M transitions and batches of 256 are not needed to check the wiring.
        overrides = {"learning_starts": 10, "buffer_size": 500, "batch_size": 32}
        if key in ZOO_GOAL_KEYS:  # HER draws from finished episodes: FetchReach's last 50 steps
            n_timesteps, overrides["learning_starts"] = 150, 60
        if complementary:
            overrides["extractor_kwargs"] = {
                "train_freq": 20,
                "refresh_interval": 20,
                "gradient_steps": 2,
                "batch_size": 16,
            }
    experiment = manager(tmp_path, name, env_id, n_timesteps=n_timesteps, hyperparams=overrides)
    model, saved = experiment.setup_experiment()
    assert type(model) is ALGOS[name]
    entry = _table(name)[key]
    assert saved["alpha"] == entry["alpha"] == model.alpha
    assert saved["policy"] == entry["policy"]
    if not learn:
        return
    experiment.learn(model)
    assert model.num_timesteps >= n_timesteps
    assert model._n_updates > 0
    if entry.get("replay_buffer_class") == "HerReplayBuffer":  # rl-zoo3 read it: our weighted HER buffer
        her_class = PrioritizedHerReplayBuffer if model.contribution == "per" else ComplementaryHerReplayBuffer
        assert isinstance(model.replay_buffer, HerReplayBuffer) and type(model.replay_buffer) is her_class
    if complementary:
        assert model.extractor_kwargs == overrides["extractor_kwargs"]  # -params reached the constructor
        assert model.extractor is None, "the packaged default (LaBER, or alpha 0) builds no extractor"
    if complementary and model.alpha > 0:
        assert model._selection_rates  # the DQN family's default: every batch was picked from a scored pool
    elif complementary:  # the actor-critic default: uniform draws, unit IS weights, no tree
        assert model.alpha == 0.0 and not model._selection_rates and model.replay_buffer.tree is None


def test_user_yaml_and_python_conf_files(tmp_path: Path) -> None:
    (tmp_path / "mine.yml").write_text(
        "CartPole-v1:\n  n_timesteps: 1000\n  policy: MlpPolicy\n  alpha: 0.8\n  policy_kwargs: 'dict(net_arch=[32])'\n"
    )
    (tmp_path / "mine.py").write_text(
        "from torch import nn\n"
        "hyperparams = {'CartPole-v1': dict(n_timesteps=1000, policy='MlpPolicy',\n"
        "               extractor_kwargs=dict(lr_ratio=0.5),\n"
        "               policy_kwargs=dict(net_arch=[24], activation_fn=nn.Tanh))}\n"
    )
    model, _ = manager(
        tmp_path / "a", "complementary_dqn", "CartPole-v1", config=str(tmp_path / "mine.yml")
    ).setup_experiment()
    assert isinstance(model, ComplementaryDQN) and model.alpha == 0.8
    assert model.policy.q_net.q_net[0].out_features == 32
    model, _ = manager(
        tmp_path / "b", "complementary_dqn", "CartPole-v1", config=str(tmp_path / "mine.py")
    ).setup_experiment()
    assert model.extractor_settings["lr_ratio"] == 0.5 and model.policy.q_net.q_net[0].out_features == 24
    assert model.policy_kwargs["activation_fn"].__name__ == "Tanh"


def test_conf_file_defaults_to_the_packaged_file_only_for_our_algorithms(tmp_path: Path) -> None:
    ours = manager(tmp_path, "prioritized_dqn", "CartPole-v1")
    assert Path(ours.config) == next(e for e in ZOO_ALGORITHMS if e.name == "prioritized_dqn").hyperparams_file
    assert ours.args.conf_file == ours.config  # recorded in the run's args.yml
    assert Path(manager(tmp_path, "dqn", "CartPole-v1").config) == ZOO_DIR / "dqn.yml"


def test_env_without_entry_uses_default_and_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    table = _table("complementary_dqn")
    assert select_entry(table, "CartPole-v0", False, "complementary_dqn.yml") == "default"
    note = capsys.readouterr().err
    for expected in (
        "CartPole-v0 has no entry",
        "Acrobot-v1, BitFlipping-15-v0, BitFlipping-20-v0, CartPole-v1, LunarLander-v3, MountainCar-v0",
        "'default'",
    ):
        assert expected in note
    assert select_entry(table, "CartPole-v1", False, "x") == "CartPole-v1"
    assert select_entry(table, "PongNoFrameskip-v4", True, "x") == "atari"
    assert capsys.readouterr().err == ""


def test_env_without_entry_or_default_is_refused_with_the_entries() -> None:
    table = {"CartPole-v1": {"policy": "MlpPolicy"}, "Acrobot-v1": {"policy": "MlpPolicy"}}
    with pytest.raises(
        HyperparamsError, match=r"mine.yml has no entry for MountainCar-v0\. Envs with entries: Acrobot-v1, CartPole-v1"
    ) as info:
        select_entry(table, "MountainCar-v0", False, "mine.yml")
    assert "'default'" in str(info.value) and "--conf-file" in str(info.value)
    with pytest.raises(HyperparamsError, match=r"is an Atari env.*'atari'"):
        select_entry(table, "PongNoFrameskip-v4", True, "mine.yml")


def test_unknown_knob_in_a_conf_file_is_a_value_error_naming_it(tmp_path: Path) -> None:
    conf = tmp_path / "typo.yml"
    conf.write_text("CartPole-v1:\n  n_timesteps: 1000\n  policy: MlpPolicy\n  extractor_kwarg: 'dict(lr_ratio=0.3)'\n")
    experiment = manager(tmp_path, "complementary_dqn", "CartPole-v1", config=str(conf))
    with pytest.raises(ValueError, match=r"'extractor_kwarg' \(did you mean 'extractor_kwargs'"):
        experiment.read_hyperparameters()
    # A knob of another algorithm is unknown too: PrioritizedDQN has no extractor.
    conf.write_text(
        "CartPole-v1:\n  n_timesteps: 1000\n  policy: MlpPolicy\n  extractor_kwargs: 'dict(lr_ratio=0.3)'\n"
    )
    with pytest.raises(ValueError, match="unknown hyperparameter for PrioritizedDQN: 'extractor_kwargs'"):
        manager(tmp_path, "prioritized_dqn", "CartPole-v1", config=str(conf)).read_hyperparameters()


def test_unknown_or_reserved_key_in_params_overrides(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="-params: unknown hyperparameter for ComplementaryDQN: 'alfa'"):
        manager(tmp_path, "complementary_dqn", "CartPole-v1", hyperparams={"alfa": 0.5}).read_hyperparameters()
    with pytest.raises(ValueError, match=r"seed \(use --seed\)"):
        manager(tmp_path, "complementary_dqn", "CartPole-v1", hyperparams={"seed": 1}).read_hyperparameters()


def test_key_check_accepts_every_rl_zoo3_file() -> None:
    """No false alarms on rl-zoo3's own files: ZOO_EXPERIMENT_KEYS covers every key rl-zoo3 consumes."""
    register_algorithms()
    checked = 0
    for path in sorted(ZOO_DIR.glob("*.yml")):
        if path.stem not in ALGOS:
            continue  # her.yml: entries for several algorithms
        for key, entry in yaml.safe_load(path.read_text()).items():
            check_keys(ALGOS[path.stem], entry, where=f"{path.name} [{key}]")
            checked += 1
    assert checked > 100
    assert {"n_timesteps", "env_wrapper", "frame_stack", "normalize"} <= ZOO_EXPERIMENT_KEYS


def test_constructor_parameters_follow_kwargs_to_dqn() -> None:
    names = constructor_parameters(ComplementaryDQN)
    assert {"extractor_kwargs", "alpha", "buffer_size", "target_update_interval", "policy"} <= names
    assert "_init_setup_model" not in names
    assert "extractor_kwargs" not in constructor_parameters(ALGOS["prioritized_dqn"])


def test_storage_plain_path_is_a_sqlite_file(tmp_path: Path) -> None:
    url = optuna_storage(str(tmp_path / "new" / "study.db"))
    assert url == f"sqlite:///{tmp_path / 'new' / 'study.db'}"
    assert (tmp_path / "new").is_dir()
    for kept in ("postgresql://u:p@host/db", "sqlite:///x.db", "journal.log", None):
        assert optuna_storage(kept) == kept
