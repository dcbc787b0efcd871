"""
``device="cuda"`` end to end, for every class at its defaults and every Complementary class in the
density ratio: training (the candidate pool's |TD|, the extractor, the IS weights on the GPU),
save/load across devices both ways, the replay buffer across devices, and the export of a
CUDA-trained model. The tests marked ``gpu`` skip without CUDA
(``benchmarks/gpu_check.sh`` runs them on a GPU machine); the fallback test runs everywhere.
"""

import pathlib
import subprocess
import sys
from typing import Any

import numpy as np
import pytest
import torch as th
from stable_baselines3.common.utils import get_device

from sb3_complementary import ComplementaryDQN, ExperienceExtractor, PrioritizedDQN, export_to_sb3
from sb3_complementary.common.export import sb3_parent
from tests.algorithms import SPECS
from tests.conftest import TINY_DQN, TINY_EXTRACTOR

CUDA = pytest.mark.skipif(not th.cuda.is_available(), reason="needs CUDA")
#: Every class: its tiny settings (those of the rest of the suite) and its env.
CLASSES: dict[str, tuple[type, str, dict[str, Any]]] = {
    "ComplementaryDQN": (ComplementaryDQN, "CartPole-v1", TINY_DQN),
    "PrioritizedDQN": (PrioritizedDQN, "CartPole-v1", TINY_DQN),
    **{name: (spec.cls, spec.env_id, spec.kwargs) for name, spec in SPECS.items()},
}
#: Past the density ratio's first fit (twice the fast memory) and several re-scores.
STEPS = 400
#: The configuration that builds an extractor (the defaults build none): the density ratio x fresh
#: |TD| on a candidate pool, with ``alpha > 0`` (the actor-critic classes default to ``alpha=0``).
DENSITY: dict[str, Any] = {"contribution": "density_ratio", "alpha": 1.0, "candidate_pool": 4}
#: Every class at its defaults, and every Complementary class in the density ratio too.
CASES = [(name, False) for name in CLASSES] + [(name, True) for name in CLASSES if name.startswith("Complementary")]
CASE_IDS = [f"{name}-{'density' if density else 'default'}" for name, density in CASES]


def make(name: str, device: str, density: bool = False, **overrides: Any) -> Any:
    """
    ``name`` at its defaults, tiny (with ``density``: in the density ratio, whose extractor fits
    within :data:`STEPS`).
    """
    cls, env_id, settings = CLASSES[name]
    extra: dict[str, Any] = {}
    if density:
        extra = {**DENSITY, "extractor_kwargs": {**TINY_EXTRACTOR["extractor_kwargs"], "fast_memory": 100}}
    kwargs = {**settings, **extra, "seed": 0, **overrides, "device": device}
    kwargs["policy_kwargs"] = dict(kwargs["policy_kwargs"])  # SB3 writes into it: never share one
    return cls("MlpPolicy", env_id, **kwargs)


def modules_of(model: Any) -> dict[str, th.nn.Module]:
    modules = {"policy": model.policy}
    if getattr(model, "extractor", None) is not None:
        modules["extractor"] = model.extractor
    return modules


def devices_of(model: Any) -> set[str]:
    """Device types of every parameter, buffer and optimizer state of the policy and the extractor."""
    tensors = [t for module in modules_of(model).values() for t in [*module.parameters(), *module.buffers()]]
    optimizers = [module.optimizer for module in modules_of(model).values() if hasattr(module, "optimizer")]
    optimizers += [getattr(model, name).optimizer for name in ("actor", "critic") if hasattr(model, name)]
    for optimizer in optimizers:
        tensors += [v for state in optimizer.state.values() for v in state.values() if isinstance(v, th.Tensor)]
    if getattr(model, "log_ent_coef", None) is not None:
        tensors.append(model.log_ent_coef)
    return {t.device.type for t in tensors}


def batch_devices(model: Any) -> set[str]:
    """Device types of a weighted batch drawn as train() draws it (through the candidate pool when there is one)."""
    batch = model._draw_batch(16)
    observations = batch.samples.observations
    tensors = [batch.weights, *(observations.values() if isinstance(observations, dict) else [observations])]
    return {t.device.type for t in tensors}


def assert_same_weights(loaded: Any, original: Any) -> None:
    for key, module in modules_of(original).items():
        mine = {k: v.cpu() for k, v in module.state_dict().items()}
        theirs = {k: v.cpu() for k, v in modules_of(loaded)[key].state_dict().items()}
        assert mine.keys() == theirs.keys()
        for k in mine:
            assert th.equal(mine[k], theirs[k]), f"{key}.{k} changed across devices"


@pytest.mark.parametrize(("name", "density"), CASES, ids=CASE_IDS)
def test_cuda_without_cuda_resolves_as_sb3(name: str, density: bool) -> None:
    """``device="cuda"`` means what SB3's ``get_device("cuda")`` says: the CPU where CUDA is absent."""
    expected = get_device("cuda")
    model = make(name, "cuda", density)
    assert (model.__dict__.get("extractor") is not None) == density, (
        "an extractor exactly where the ratio is drawn from"
    )
    settings = {**CLASSES[name][2], "device": "cuda", "policy_kwargs": dict(CLASSES[name][2]["policy_kwargs"])}
    parent = sb3_parent(type(model))("MlpPolicy", model.get_env(), **settings)
    assert model.device == parent.device == expected
    assert devices_of(model) == {expected.type}
    model.learn(200)  # past learning_starts: train() ran
    assert model._n_updates > 0
    assert devices_of(model) == {expected.type}


def test_the_extractor_resolves_cuda_as_sb3() -> None:
    extractor = ExperienceExtractor(4, [8], learning_rate=1e-3, device="cuda")
    assert extractor.device == get_device("cuda")
    assert {p.device.type for p in extractor.parameters()} == {get_device("cuda").type}
    logits = extractor.numpy_logits(np.zeros((3, 4), dtype=np.float32))
    assert isinstance(logits, np.ndarray) and logits.shape == (3,)


@pytest.mark.gpu
@CUDA
@pytest.mark.parametrize(("name", "density"), CASES, ids=CASE_IDS)
def test_trains_on_cuda(name: str, density: bool) -> None:
    model = make(name, "cuda", density).learn(STEPS)
    assert model._n_updates > 0
    assert devices_of(model) == {"cuda"}
    assert batch_devices(model) == {"cuda"}
    if model.alpha > 0 and model.candidate_pool:  # the DQN family's default, and the density ratio
        assert model._selection_rates, "the pool's |TD| was not measured"
    if density:
        assert "extractor" in modules_of(model) and np.isfinite(model.extractor_auc), "the extractor never fitted"
    assert np.isfinite(model.replay_diagnostics()["ess_fraction"])


@pytest.mark.gpu
@CUDA
@pytest.mark.parametrize(
    "replay",
    [{"contribution": "fresh_td"}, {"contribution": "density_ratio", "alpha": 0.6, "candidate_pool": 0}],
    ids=["fresh-td", "density-ratio-tree"],
)
def test_the_other_replays_train_on_cuda(replay: dict[str, Any]) -> None:
    """fresh |TD| on a pool, and the density ratio's sum-tree path (the defaults and the pool's ratio run above)."""
    model = make("ComplementaryDQN", "cuda", **replay).learn(STEPS)
    assert model._n_updates > 0
    assert devices_of(model) == {"cuda"}


@pytest.mark.gpu
@CUDA
@pytest.mark.parametrize(("name", "density"), CASES, ids=CASE_IDS)
def test_save_load_across_devices(name: str, density: bool, tmp_path: pathlib.Path) -> None:
    """Trained on CUDA, loaded and trained on the CPU, saved, loaded and trained on CUDA again."""
    model = make(name, "cuda", density).learn(STEPS)
    model.save(tmp_path / "cuda.zip")
    on_cpu = type(model).load(tmp_path / "cuda.zip", env=model.get_env(), device="cpu")
    assert on_cpu.device.type == "cpu" and devices_of(on_cpu) == {"cpu"}
    assert_same_weights(on_cpu, model)
    on_cpu.learn(100, reset_num_timesteps=False)
    assert devices_of(on_cpu) == {"cpu"}
    on_cpu.save(tmp_path / "cpu.zip")
    back = type(model).load(tmp_path / "cpu.zip", env=model.get_env(), device="cuda")
    assert_same_weights(back, on_cpu)
    back.learn(100, reset_num_timesteps=False)
    assert devices_of(back) == {"cuda"}


@pytest.mark.gpu
@CUDA
@pytest.mark.parametrize("name", ["ComplementaryDQN", "ComplementarySAC"])
def test_the_replay_buffer_moves_across_devices(name: str, tmp_path: pathlib.Path) -> None:
    model = make(name, "cuda", density=True).learn(STEPS)
    model.save_replay_buffer(tmp_path / "buffer.pkl")
    on_cpu = make(name, "cpu", density=True)
    on_cpu.load_replay_buffer(tmp_path / "buffer.pkl")
    assert on_cpu.replay_buffer.device.type == "cpu"
    assert batch_devices(on_cpu) == {"cpu"}
    on_cpu.learn(100)
    back = make(name, "cuda", density=True)
    back.load_replay_buffer(tmp_path / "buffer.pkl")
    assert batch_devices(back) == {"cuda"}


@pytest.mark.gpu
@CUDA
@pytest.mark.parametrize("name", CLASSES)
def test_a_cuda_model_exports_for_the_cpu(name: str, tmp_path: pathlib.Path) -> None:
    model = make(name, "cuda").learn(STEPS)
    parent = sb3_parent(type(model))
    deployed = parent.load(export_to_sb3(model, tmp_path / "exported"), device="cpu")
    assert {p.device.type for p in deployed.policy.parameters()} == {"cpu"}
    for key, value in model.policy.state_dict().items():
        assert th.equal(value.cpu(), deployed.policy.state_dict()[key])


@pytest.mark.skipif(th.cuda.is_available(), reason="checks the refusal where CUDA is absent")
def test_the_cuda_benchmark_refuses_without_cuda() -> None:
    root = pathlib.Path(__file__).resolve().parents[1]
    for args in (["--device", "cuda"], ["--only", "gpu"]):
        done = subprocess.run(  # the documented command: python -m benchmarks.perf, from the checkout's root
            [sys.executable, "-m", "benchmarks.perf", *args], cwd=root, capture_output=True, text=True, timeout=300
        )
        assert done.returncode == 2, done.stderr
        assert "CUDA is not available" in done.stderr
