"""Run files and the resume logic: finished runs are skipped, killed or half-written ones redone."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from benchmarks.harness.matrix_yaml import parse_matrix
from benchmarks.harness.plan import plan_runs
from benchmarks.harness.store import (
    FORMAT_VERSION,
    RunFileVersionError,
    read_run_file,
    run_path,
    scan_runs,
    write_run_file,
)


def matrix() -> Any:
    return parse_matrix(
        {
            "seeds": "0-1",
            "contenders": {"dqn": {"algo": "dqn"}},
            "suite": [{"env": "CartPole-v1", "budget": 1000}],
        }
    )


def record(run_id: str, status: str = "done") -> dict[str, Any]:
    contender, env, seed = run_id.split("__")
    data: dict[str, Any] = {
        "run_id": run_id,
        "status": status,
        "contender": {"name": contender, "algo": "stable_baselines3:DQN", "kwargs": {}},
        "env": {"name": env, "budget": 1000, "r_ref": 500.0},
        "seed": int(seed[1:]),
    }
    if status == "done":
        data["curve"] = {"timesteps": [500, 1000], "mean": [10.0, 20.0]}
        data["timing"] = {"train_seconds": 1.0}
    else:
        data["error"] = "RuntimeError: boom"
        data["traceback"] = "Traceback (most recent call last):\nRuntimeError: boom\n"
    return data


def test_fresh_matrix_is_all_pending(tmp_path: Path) -> None:
    plan = plan_runs(matrix(), tmp_path)
    assert [s.run_id for s in plan.pending] == ["dqn__CartPole-v1__s0", "dqn__CartPole-v1__s1"]
    assert plan.count("missing") == 2


def test_finished_run_is_skipped(tmp_path: Path) -> None:
    write_run_file(tmp_path, record("dqn__CartPole-v1__s0"))
    plan = plan_runs(matrix(), tmp_path)
    assert [s.run_id for s in plan.pending] == ["dqn__CartPole-v1__s1"]
    assert plan.states["dqn__CartPole-v1__s0"] == "done"


def test_half_written_run_is_redone(tmp_path: Path) -> None:
    path = write_run_file(tmp_path, record("dqn__CartPole-v1__s0"))
    text = path.read_text()
    path.write_text(text[: len(text) // 2])  # as if the writer was killed mid-write (non-atomic copy)
    plan = plan_runs(matrix(), tmp_path)
    assert plan.states["dqn__CartPole-v1__s0"] == "corrupt"
    assert "dqn__CartPole-v1__s0" in [s.run_id for s in plan.pending]
    records, corrupt = scan_runs(tmp_path)
    assert records == [] and corrupt == [path]


@pytest.mark.parametrize(
    "content",
    ["", "{}", json.dumps({"format_version": FORMAT_VERSION, "status": "running"}), json.dumps([1, 2])],
)
def test_incomplete_records_are_corrupt(tmp_path: Path, content: str) -> None:
    path = run_path(tmp_path, "dqn__CartPole-v1__s0")
    path.write_text(content)
    assert read_run_file(path) == ("corrupt", None)


def test_done_record_without_curve_is_corrupt(tmp_path: Path) -> None:
    data = record("dqn__CartPole-v1__s0")
    del data["curve"]
    write_run_file(tmp_path, data)
    assert read_run_file(run_path(tmp_path, "dqn__CartPole-v1__s0"))[0] == "corrupt"


def test_failed_run_is_recorded_and_not_retried_by_default(tmp_path: Path) -> None:
    write_run_file(tmp_path, record("dqn__CartPole-v1__s0", status="failed"))
    state, data = read_run_file(run_path(tmp_path, "dqn__CartPole-v1__s0"))
    assert state == "failed" and data is not None
    assert "RuntimeError: boom" in data["traceback"]
    assert "dqn__CartPole-v1__s0" not in [s.run_id for s in plan_runs(matrix(), tmp_path).pending]
    assert "dqn__CartPole-v1__s0" in [s.run_id for s in plan_runs(matrix(), tmp_path, retry_failed=True).pending]


def test_other_format_version_is_an_error_naming_the_file(tmp_path: Path) -> None:
    path = run_path(tmp_path, "dqn__CartPole-v1__s0")
    path.write_text(json.dumps({**record("dqn__CartPole-v1__s0"), "format_version": FORMAT_VERSION + 1}))
    with pytest.raises(RunFileVersionError, match=r"dqn__CartPole-v1__s0\.json: run file of format version"):
        plan_runs(matrix(), tmp_path)


@pytest.mark.parametrize(("mask", "mode"), [(0o022, 0o644), (0o077, 0o600)])
def test_atomic_write_leaves_no_temp_file(tmp_path: Path, mask: int, mode: int) -> None:
    """The file gets the mode a plain ``open()`` gives under the umask (0o666 less the mask), not mkstemp's 0o600."""
    old = os.umask(mask)
    try:
        path = write_run_file(tmp_path, record("dqn__CartPole-v1__s0"))
    finally:
        os.umask(old)
    assert sorted(p.name for p in tmp_path.iterdir()) == [path.name]
    assert json.loads(path.read_text())["format_version"] == FORMAT_VERSION
    assert path.stat().st_mode & 0o777 == mode


def test_refuses_to_write_unfinished_status(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="status 'running'"):
        write_run_file(tmp_path, {**record("dqn__CartPole-v1__s0"), "status": "running"})
