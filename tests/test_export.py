"""
``export_to_sb3``: a file that the parent algorithm loads where this package is not installed.

Every class is trained a few hundred steps, exported, and loaded by its parent in a subprocess
that cannot import ``sb3_complementary`` (a meta-path finder refuses it, and the subprocess checks
that it does); the loaded model's deterministic actions on fixed observations must equal the
trained model's. The same subprocess loads the un-exported save file of a Complementary class
and must fail, so that the guard is known to bite.
"""

import base64
import copy
import io
import json
import pathlib
import subprocess
import sys
import zipfile
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch as th
from stable_baselines3 import DQN, SAC
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.envs import BitFlippingEnv

import sb3_complementary.common.export as export_module
from sb3_complementary import ComplementaryCrossQ, ComplementaryDQN, PrioritizedDQN, export_to_sb3
from tests.algorithms import SPECS, TINY_AC, build
from tests.conftest import TINY_DQN, TINY_EXTRACTOR

N_OBS = 16


def _dqn(cls: type[BaseAlgorithm]) -> Any:
    extra = TINY_EXTRACTOR if cls is ComplementaryDQN else {}
    return cls("MlpPolicy", "CartPole-v1", seed=0, **TINY_DQN, **extra)  # the default replay of each class


def _crossq_dict() -> Any:
    env = BitFlippingEnv(n_bits=4, continuous=True)
    return ComplementaryCrossQ("MultiInputPolicy", env, seed=0, **{**TINY_AC, "policy_kwargs": {"net_arch": [16]}})


#: Every class of the package, by name: a builder of a tiny model, and its parent's dotted name.
CASES: dict[str, tuple[Any, str]] = {
    "ComplementaryDQN": (lambda: _dqn(ComplementaryDQN), "stable_baselines3.DQN"),
    "PrioritizedDQN": (lambda: _dqn(PrioritizedDQN), "stable_baselines3.DQN"),
    **{
        name: (lambda name=name: build(name, seed=0), f"{spec.parent.__module__.split('.')[0]}.{spec.parent.__name__}")
        for name, spec in SPECS.items()
    },
    "ComplementaryCrossQ-Dict": (_crossq_dict, "sb3_contrib.CrossQ"),
}
STEPS = 300

#: Loads each (parent, file, observations) in a process where ``sb3_complementary`` cannot be imported.
GUARDED_LOADER = r"""
import importlib.abc, json, sys, traceback
import numpy as np

class RefuseThePackage(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "sb3_complementary" or name.startswith("sb3_complementary."):
            raise ImportError(f"{name} is not installed here")
        return None

sys.meta_path.insert(0, RefuseThePackage())
try:
    import sb3_complementary
except ImportError:
    pass
else:
    sys.exit("the guard let sb3_complementary in")

import importlib
results = {}
for job in json.loads(sys.argv[1]):
    module, name = job["parent"].rsplit(".", 1)
    try:
        model = getattr(importlib.import_module(module), name).load(job["file"], device="cpu")
        obs = np.load(job["obs"], allow_pickle=True).item()
        obs = obs["array"] if "array" in obs else obs
        actions, _ = model.predict(obs, deterministic=True)
        results[job["file"]] = {"actions": actions.tolist()}
    except Exception as exc:
        results[job["file"]] = {"error": f"{type(exc).__name__}: {exc}"}
print(json.dumps(results))
"""


def fixed_observations(model: BaseAlgorithm) -> dict[str, np.ndarray] | np.ndarray:
    space = model.observation_space
    space.seed(1)
    samples = [space.sample() for _ in range(N_OBS)]
    if isinstance(space, gym.spaces.Dict):
        return {key: np.stack([s[key] for s in samples]) for key in space.spaces}
    return np.stack(samples)


def load_guarded(jobs: list[dict[str, str]], cwd: pathlib.Path) -> dict[str, dict[str, Any]]:
    """Run :data:`GUARDED_LOADER` isolated (``-I``: no user site, no script folder on the path) in ``cwd``."""
    done = subprocess.run(
        [sys.executable, "-I", "-c", GUARDED_LOADER, json.dumps(jobs)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def references_the_package(path: pathlib.Path) -> list[str]:
    """Keys of the file's ``data`` mentioning the package, in plain text or in a cloudpickled entry."""
    with zipfile.ZipFile(path) as archive:
        data = json.loads(archive.read("data"))
    found = []
    for key, value in data.items():
        blob = base64.b64decode(value[":serialized:"]) if isinstance(value, dict) and ":serialized:" in value else b""
        if "sb3_complementary" in json.dumps(value) or b"sb3_complementary" in blob:
            found.append(key)
    return found


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Every case trained, exported and loaded once in the guarded subprocess (one interpreter start for all)."""
    folder = tmp_path_factory.mktemp("export")
    cases, jobs = {}, []
    for name, (make, parent) in CASES.items():
        model = make().learn(STEPS)
        obs = fixed_observations(model)
        np.save(folder / f"{name}.obs.npy", np.array(obs if isinstance(obs, dict) else {"array": obs}, dtype=object))
        path = export_to_sb3(model, folder / f"{name}-exported")
        model.save(folder / f"{name}-own.zip")
        expected, _ = model.predict(obs, deterministic=True)
        cases[name] = {"model": model, "path": path, "expected": expected, "parent": parent}
        for file in (path, folder / f"{name}-own.zip"):
            jobs.append({"parent": parent, "file": str(file), "obs": str(folder / f"{name}.obs.npy")})
    return {"cases": cases, "results": load_guarded(jobs, folder), "folder": folder}


@pytest.mark.parametrize("name", CASES)
def test_the_parent_loads_the_export_without_the_package(name: str, exported: dict[str, Any]) -> None:
    case = exported["cases"][name]
    result = exported["results"][str(case["path"])]
    assert "error" not in result, result
    np.testing.assert_allclose(np.asarray(result["actions"]), case["expected"], rtol=0, atol=1e-6)


@pytest.mark.parametrize("name", [n for n in CASES if n.startswith("Complementary")])
def test_the_guarded_loader_rejects_an_unexported_complementary_file(name: str, exported: dict[str, Any]) -> None:
    """The subprocess's guard bites: the model's own save file needs the package, and fails there."""
    result = exported["results"][str(exported["folder"] / f"{name}-own.zip")]
    assert "error" in result, f"{name}.save() loaded in the parent without the package"


@pytest.mark.parametrize("name", CASES)
def test_the_export_holds_the_parent_keys_only(name: str, exported: dict[str, Any]) -> None:
    case = exported["cases"][name]
    assert references_the_package(case["path"]) == []
    with zipfile.ZipFile(case["path"]) as archive:
        members, data = set(archive.namelist()), json.loads(archive.read("data"))
    # The parent's own save of the same settings, on the same env: the same members and data keys.
    model = case["model"]
    parent = export_module.sb3_parent(type(model))
    policy_kwargs = copy.deepcopy(model.policy_kwargs)
    plain = parent(model.policy_class, model.get_env(), buffer_size=model.buffer_size, policy_kwargs=policy_kwargs)
    buffer = io.BytesIO()
    plain.save(buffer)
    buffer.seek(0)
    with zipfile.ZipFile(buffer) as archive:
        plain_members, plain_data = set(archive.namelist()), json.loads(archive.read("data"))
    assert members == plain_members
    assert set(data) == set(plain_data)


def test_a_complementary_class_alone_references_the_package(exported: dict[str, Any]) -> None:
    """The check above can fail: the model's own save file names the package (its knobs, its buffer class)."""
    assert references_the_package(exported["folder"] / "ComplementaryDQN-own.zip")


def test_exporting_a_plain_sb3_model_names_its_class(tmp_path: pathlib.Path) -> None:
    with pytest.raises(ValueError, match="got DQN"):
        export_to_sb3(DQN("MlpPolicy", "CartPole-v1", **TINY_DQN), tmp_path / "dqn.zip")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="got str"):
        export_to_sb3("model.zip", tmp_path / "x.zip")  # type: ignore[arg-type]


def test_exporting_a_policy_that_is_not_sb3s_names_its_class(tmp_path: pathlib.Path) -> None:
    class NotAPolicy(th.nn.Module):
        pass

    model = _dqn(PrioritizedDQN)
    model.policy_class = NotAPolicy
    with pytest.raises(ValueError, match="NotAPolicy"):
        export_to_sb3(model, tmp_path / "dqn.zip")
    assert not (tmp_path / "dqn.zip").exists()


def test_a_failed_export_leaves_the_previous_file(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "model.zip"
    target.write_bytes(b"previous")

    def half_written(file: Any, **kwargs: Any) -> None:
        file.write(b"half")
        raise OSError("disk full")

    monkeypatch.setattr(export_module, "save_to_zip_file", half_written)
    with pytest.raises(OSError, match="disk full"):
        export_to_sb3(_dqn(PrioritizedDQN), target)
    assert target.read_bytes() == b"previous"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.zip"]


def test_export_appends_zip_and_resumes_in_the_parent(tmp_path: pathlib.Path) -> None:
    """A path without suffix gets ``.zip``, as SB3's; the parent can go on training from the file."""
    model = build("PrioritizedSAC", seed=0).learn(150)
    path = export_to_sb3(model, tmp_path / "sac")
    assert path == tmp_path / "sac.zip" and path.is_file()
    loaded = SAC.load(path, env=gym.make("Pendulum-v1"), device="cpu")
    assert loaded.num_timesteps == model.num_timesteps
    loaded.learn(50, reset_num_timesteps=False)
    assert loaded.num_timesteps == model.num_timesteps + 50


def test_the_onnx_route_acts_as_predict(tmp_path: pathlib.Path) -> None:
    """docs/exporting.md's ONNX block (skipped by the docs test, which cannot assume onnx): the same steps."""
    pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    docs = pathlib.Path(__file__).resolve().parents[1] / "docs" / "exporting.md"
    greedy = docs.read_text().split("class GreedyQNetwork", 1)[1].split("\n\n\n", 1)[0]
    namespace: dict[str, Any] = {"th": th}
    exec("class GreedyQNetwork" + greedy, namespace)
    model = _dqn(ComplementaryDQN).learn(STEPS)
    deployed = DQN.load(export_to_sb3(model, tmp_path / "dqn"), device="cpu")
    obs = np.asarray(fixed_observations(model), dtype=np.float32)
    th.onnx.export(
        namespace["GreedyQNetwork"](deployed.policy.q_net).eval(),
        (th.as_tensor(obs),),
        str(tmp_path / "dqn.onnx"),
        input_names=["observation"],
        dynamic_axes={"observation": {0: "batch"}},
        dynamo=False,
    )
    runtime = ort.InferenceSession(str(tmp_path / "dqn.onnx"))
    np.testing.assert_array_equal(runtime.run(None, {"observation": obs})[0], model.predict(obs, deterministic=True)[0])


def test_a_her_model_exports_with_sb3s_her_buffer(tmp_path: pathlib.Path) -> None:
    """This package's HER buffer becomes SB3's, with the HER arguments kept and the replay knobs dropped."""
    from stable_baselines3.her import HerReplayBuffer

    her = {"n_sampled_goal": 2, "goal_selection_strategy": "final"}
    env = BitFlippingEnv(n_bits=4)
    settings = {**TINY_DQN, "learning_starts": 100}
    model = PrioritizedDQN(
        "MultiInputPolicy", env, replay_buffer_class=HerReplayBuffer, replay_buffer_kwargs=her, seed=0, **settings
    )
    path = export_to_sb3(model.learn(200), tmp_path / "her")
    assert references_the_package(path) == []
    loaded = DQN.load(path, env=BitFlippingEnv(n_bits=4), device="cpu")
    assert loaded.replay_buffer_class is HerReplayBuffer
    assert loaded.replay_buffer_kwargs == her
    assert type(loaded.replay_buffer) is HerReplayBuffer
    loaded.learn(100)
