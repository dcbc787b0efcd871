"""One real tiny run end to end, crash handling, lazy contender import, and the command line."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
import yaml
from stable_baselines3 import DQN

from benchmarks.harness import backends, runner
from benchmarks.harness.store import read_run_file, run_path
from tests.conftest import DENSITY_RATIO

TINY_HYPERPARAMS = {
    "policy": "MlpPolicy",
    "learning_starts": 100,
    "train_freq": 4,
    "gradient_steps": 1,
    "batch_size": 32,
    "buffer_size": 1000,
    "target_update_interval": 50,
    "policy_kwargs": "dict(net_arch=[32])",
}


def write_tiny_matrix(path: Path, contenders: dict[str, Any], seeds: str = "0", budget: int = 300) -> Path:
    """A CartPole matrix small enough for a test: ``budget`` steps, 4 evals of 2 episodes."""
    doc = {
        "seeds": seeds,
        "eval": {"fraction": 0.25, "episodes": 2},
        "random_policy": {"episodes": 5, "seed": 0},
        "contenders": contenders,
        "suite": [{"env": "CartPole-v1", "budget": budget, "hyperparams": TINY_HYPERPARAMS}],
    }
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


class CrashingDQN(DQN):
    """A contender that fails while learning."""

    def train(self, gradient_steps: int, batch_size: int = 100) -> None:
        raise RuntimeError("synthetic failure inside train()")


class DyingDQN(DQN):
    """A contender whose process dies without a word (as if killed or out of memory)."""

    def train(self, gradient_steps: int, batch_size: int = 100) -> None:
        os._exit(3)


@pytest.fixture
def keep_torch_threads() -> Iterator[None]:
    """In-process runs set torch to one thread; give the test session its threads back."""
    threads = torch.get_num_threads()
    yield
    torch.set_num_threads(threads)


def test_real_tiny_run_end_to_end(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    matrix = write_tiny_matrix(tmp_path / "m.yml", {"dqn": {"algo": "dqn"}})
    out = tmp_path / "runs"
    argv = ["--matrix", str(matrix), "--out", str(out), "--workers", "1", "--no-progress"]
    assert runner.main(argv) == 0

    state, record = read_run_file(run_path(out, "dqn__CartPole-v1__s0"))
    assert state == "done" and record is not None
    assert record["curve"]["timesteps"] == [75, 150, 225, 300]
    assert len(record["curve"]["returns"][0]) == 2
    timing = record["timing"]
    assert timing["train_seconds"] > 0 and timing["env_steps"] == 300
    assert timing["env_steps_per_second"] == pytest.approx(300 / timing["train_seconds"])
    assert record["torch_threads"] == 1
    assert record["pid"] != os.getpid()  # ran in its own process
    assert {"stable_baselines3", "torch", "gymnasium", "numpy", "sb3-complementary"} <= set(record["versions"])
    assert record["hyperparams"]["model_kwargs"]["policy_kwargs"] == {"net_arch": [32]}
    assert record["model_kwargs"]["learning_starts"] == 100
    assert record["seed"] == 0 and record["contender"]["algo"] == "stable_baselines3:DQN"
    assert "package_sha256" in record["code"]
    random_scores = json.loads((out / "random_scores.json").read_text())["scores"]
    assert random_scores["CartPole-v1"]["episodes"] == 5

    capsys.readouterr()
    assert runner.main(argv) == 0  # resume: the finished run is skipped
    assert "pending 0" in capsys.readouterr().out


def test_her_entry_builds_the_weighted_her_buffer_and_records_success(tmp_path: Path) -> None:
    """``replay_buffer_class: HerReplayBuffer`` in a matrix, as in zoo files; goal envs record their success rate."""
    doc = {
        "seeds": "0",
        "eval": {"fraction": 0.5, "episodes": 3},
        "random_policy": {"episodes": 5, "seed": 0},
        "contenders": {"her": {"algo": "dqn"}, "per-her": {"algo": "per"}},
        "suite": [
            {
                "name": "BitFlipping-4-HER",
                "env": "stable_baselines3.common.envs:BitFlippingEnv",
                "env_kwargs": {"n_bits": 4},
                "budget": 200,
                "r_ref": -1.125,
                "r_ref_source": "optimal return for 4 bits",
                "hyperparams": {
                    **TINY_HYPERPARAMS,
                    "policy": "MultiInputPolicy",
                    "learning_starts": 20,
                    "replay_buffer_class": "HerReplayBuffer",
                    "replay_buffer_kwargs": {"n_sampled_goal": 2, "goal_selection_strategy": "final"},
                },
            }
        ],
    }
    matrix = tmp_path / "m.yml"
    matrix.write_text(yaml.safe_dump(doc, sort_keys=False))
    out = tmp_path / "runs"
    assert runner.main(["--matrix", str(matrix), "--out", str(out), "--workers", "0", "--no-progress"]) == 0
    for contender in ("her", "per-her"):
        state, record = read_run_file(run_path(out, f"{contender}__BitFlipping-4-HER__s0"))
        assert state == "done" and record is not None, record and record["traceback"]
        curve = record["curve"]
        assert len(curve["success_rate"]) == 2 and all(len(returns) == 3 for returns in curve["returns"])
        # BitFlippingEnv pays -1 a step until the goal is reached (0 on that step) and ends after 4 steps: an
        # episode succeeded if and only if its return is above -4, so each rate is that share of the 3 episodes.
        expected = [np.mean(np.array(returns) > -4) for returns in curve["returns"]]
        np.testing.assert_allclose(curve["success_rate"], expected)
        assert record["model_kwargs"]["replay_buffer_class"] == "HerReplayBuffer"
    _, per = read_run_file(run_path(out, "per-her__BitFlipping-4-HER__s0"))
    assert per is not None and "ess_fraction" in per["curve"]  # the weighted HER buffer ran


def test_crash_is_recorded_and_matrix_goes_on(tmp_path: Path, keep_torch_threads: None) -> None:
    contenders = {
        "crash": {"algo": f"{__name__}:CrashingDQN"},
        # The module exists, the class does not (yet): the matrix loads, only the run fails.
        "notyet": {"algo": "sb3_complementary:NoSuchContenderYet"},
        "dqn": {"algo": "dqn"},
    }
    matrix = write_tiny_matrix(tmp_path / "m.yml", contenders)
    out = tmp_path / "runs"
    assert runner.main(["--matrix", str(matrix), "--out", str(out), "--workers", "0", "--no-progress"]) == 1

    state, record = read_run_file(run_path(out, "crash__CartPole-v1__s0"))
    assert state == "failed" and record is not None
    assert "synthetic failure inside train()" in record["traceback"]
    assert record["error"].startswith("RuntimeError")
    state, record = read_run_file(run_path(out, "notyet__CartPole-v1__s0"))
    assert state == "failed" and record is not None and "NoSuchContenderYet" in record["error"]
    assert read_run_file(run_path(out, "dqn__CartPole-v1__s0"))[0] == "done"


def test_drift_entry_evaluates_the_task_being_trained_and_records_replay_diagnostics(
    tmp_path: Path, keep_torch_threads: None
) -> None:
    doc = {
        "seeds": "0",
        "eval": {"fraction": 0.25, "episodes": 2},
        "random_policy": {"episodes": 5, "seed": 0},
        "contenders": {
            "density": {
                "algo": "complementary",
                "kwargs": {
                    **DENSITY_RATIO,
                    "extractor_kwargs": {"fast_memory": 100, "train_freq": 100, "refresh_interval": 100},
                },
            }
        },
        "suite": [
            {
                "name": "CartPole-drift",
                "env": "sb3_complementary.multitask:MultiTaskEnv",
                "env_kwargs": {
                    "tasks": "cartpole",
                    "schedule": "sequential",
                    "block_steps": 200,
                    "variants": ["default", "short_pole"],
                },
                "eval_env_kwargs": {"schedule": "round_robin", "block_steps": None},
                "eval_task": "training",
                "budget": 800,
                "hyperparams": TINY_HYPERPARAMS,
                "r_ref": 500,
                "r_ref_source": "CartPole's maximum return",
            }
        ],
    }
    matrix = tmp_path / "m.yml"
    matrix.write_text(yaml.safe_dump(doc, sort_keys=False))
    out = tmp_path / "runs"
    assert runner.main(["--matrix", str(matrix), "--out", str(out), "--workers", "0", "--no-progress"]) == 0
    state, record = read_run_file(run_path(out, "density__CartPole-drift__s0"))
    assert state == "done" and record is not None
    curve = record["curve"]
    # Task 1 (short_pole) is trained from the first episode after 200 steps: the 600- and 800-step evaluations.
    assert curve["eval_task"][0] == 0 and curve["eval_task"][-2:] == [1, 1]
    for name in ("ess_fraction", "weight_p5", "weight_p95", "weight_max", "roc_auc"):
        assert len(curve[name]) == len(curve["timesteps"])
    # 800 transitions > 2 x fast_memory: the classifier was fitted and its held-out AUC measured; the
    # re-scored weights are off uniform, so the replay's ESS is below 1.
    assert np.isfinite(curve["roc_auc"][-1])
    assert curve["weight_max"][-1] > 1.0 and curve["ess_fraction"][-1] < 1.0


def test_killed_worker_leaves_no_file_and_the_matrix_goes_on(tmp_path: Path) -> None:
    contenders = {"dying": {"algo": f"{__name__}:DyingDQN"}, "dqn": {"algo": "dqn"}}
    matrix = write_tiny_matrix(tmp_path / "m.yml", contenders, budget=200)
    out = tmp_path / "runs"
    assert runner.main(["--matrix", str(matrix), "--out", str(out), "--workers", "1", "--no-progress"]) == 1
    assert read_run_file(run_path(out, "dying__CartPole-v1__s0"))[0] == "missing"  # redone next time
    assert read_run_file(run_path(out, "dqn__CartPole-v1__s0"))[0] == "done"


def test_dry_run_is_seed_major_and_filters(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    matrix = write_tiny_matrix(tmp_path / "m.yml", {"dqn": {"algo": "dqn"}, "b": {"algo": "dqn"}}, seeds="0-2")
    out = tmp_path / "runs"
    assert runner.main(["--matrix", str(matrix), "--out", str(out), "--dry-run"]) == 0
    listed = [line.split()[0] for line in capsys.readouterr().out.splitlines() if line.startswith("  ")]
    assert listed == [f"{c}__CartPole-v1__s{s}" for s in range(3) for c in ("dqn", "b")]
    assert not out.exists() or not any(out.iterdir())  # a dry run writes nothing

    assert (
        runner.main(
            ["--matrix", str(matrix), "--out", str(out), "--dry-run", "--seeds", "1-2", "--only-contenders", "b"]
        )
        == 0
    )
    listed = [line.split()[0] for line in capsys.readouterr().out.splitlines() if line.startswith("  ")]
    assert listed == ["b__CartPole-v1__s1", "b__CartPole-v1__s2"]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--only-contenders", "nope"], "unknown contender(s) ['nope']"),
        (["--only-envs", "Nope-v0"], "unknown suite"),
        (["--seeds", "7"], "seed(s) [7] are not in"),
        (["--seeds", "x"], "malformed seeds"),
        (["--workers", "-1"], "--workers must be >= 0"),
    ],
)
def test_bad_command_line(tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], message: str) -> None:
    matrix = write_tiny_matrix(tmp_path / "m.yml", {"dqn": {"algo": "dqn"}})
    assert runner.main(["--matrix", str(matrix), "--out", str(tmp_path / "runs"), "--dry-run", *extra]) == 2
    assert message in capsys.readouterr().err


def test_missing_ray_gives_install_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "ray", None)  # makes `import ray` raise ImportError
    with pytest.raises(RuntimeError, match=r"pip install 'sb3-complementary\[distributed\]'"):
        backends.import_ray()
