"""The Ray backend on a local instance, with two tiny runs (needs the [distributed] extra)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from benchmarks.harness.execute import execute_plan
from benchmarks.harness.matrix_yaml import load_matrix
from benchmarks.harness.plan import plan_runs
from benchmarks.harness.store import read_run_file, run_path

if os.environ.get("SB3C_REQUIRE_RAY"):  # .ci/run sets it: there a missing Ray is a failure, not a skip
    import ray  # noqa: F401
else:
    pytest.importorskip(
        "ray", reason="Ray is the optional [distributed] extra: pip install 'sb3-complementary[distributed]'"
    )


@pytest.mark.ray
def test_two_tiny_runs_on_a_local_ray_instance(tmp_path: Path) -> None:
    doc = {
        "seeds": "0-1",
        "eval": {"fraction": 0.25, "episodes": 2},
        "contenders": {"dqn": {"algo": "dqn"}},
        "suite": [
            {
                "env": "CartPole-v1",
                "budget": 200,
                "hyperparams": {"learning_starts": 100, "buffer_size": 500, "policy_kwargs": "dict(net_arch=[32])"},
            }
        ],
    }
    (tmp_path / "m.yml").write_text(yaml.safe_dump(doc))
    matrix = load_matrix(tmp_path / "m.yml")
    out = tmp_path / "runs"
    plan = plan_runs(matrix, out)
    assert len(plan.pending) == 2

    summary = execute_plan(plan.pending, out, workers=2, ray_address="local", progress=False)

    assert sorted(summary.done) == ["dqn__CartPole-v1__s0", "dqn__CartPole-v1__s1"]
    assert summary.failed == [] and summary.lost == []
    for seed in (0, 1):
        state, record = read_run_file(run_path(out, f"dqn__CartPole-v1__s{seed}"))
        assert state == "done" and record is not None, record
        assert record["curve"]["timesteps"][-1] == 200
        assert record["torch_threads"] == 1
    assert plan_runs(matrix, out).pending == []
