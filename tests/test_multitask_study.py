"""The multi-task study through the benchmark runner: its matrix, per-task splitting of run files, forgetting."""

from dataclasses import replace
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces

from benchmarks.harness.hyperparams import Hyperparams, zoo_hyperparams
from benchmarks.harness.matrix import Contender, EvalSettings, RunSpec, SuiteEntry
from benchmarks.harness.matrix_yaml import default_matrix_path, load_matrix
from benchmarks.harness.multitask_study import (
    PerTaskCurve,
    forgetting,
    load_curves,
    main,
    per_task_curve,
    plot_per_task_curves,
    summary_markdown,
)
from benchmarks.harness.normalize import ReferenceScore
from benchmarks.harness.run import execute_run
from benchmarks.harness.store import write_run_file
from sb3_complementary.multitask import ParamSpec, register_family
from sb3_complementary.multitask import variants as variants_module


class ConstantReward(gym.Env):
    """Three-step episodes paying ``reward_value`` per step whatever the action: an episode's return names its task."""

    def __init__(self) -> None:
        self.observation_space = spaces.Box(-1.0, 1.0, (2,), np.float32)
        self.action_space = spaces.Discrete(2)
        self.reward_value = 1.0
        self._t = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self._t = 0
        return np.zeros(2, np.float32), {}

    def step(self, action):
        self._t += 1
        return np.zeros(2, np.float32), self.reward_value, self._t >= 3, False, {}


@pytest.fixture
def constant_family(monkeypatch):
    """A family whose task k pays k + 1 per step (registered for this test only)."""
    if "ConstantReward-v0" not in gym.registry:
        gym.register("ConstantReward-v0", entry_point=f"{__name__}:ConstantReward")
    monkeypatch.setattr(variants_module, "_FAMILIES", dict(variants_module._FAMILIES))
    register_family(
        "constant",
        {f"pays_{k + 1}": {"reward_value": float(k + 1)} for k in range(3)},
        env_id="ConstantReward-v0",
        params={"reward_value": ParamSpec(low=0.0)},
    )


TINY_HYPERPARAMS = Hyperparams(
    policy="MlpPolicy",
    model_kwargs={"learning_starts": 10_000, "buffer_size": 1000, "policy_kwargs": {"net_arch": [8]}},
    source="test",
)


def multitask_entry(env_kwargs, eval_env_kwargs, budget):
    return SuiteEntry(
        name="toy-family",
        env_id="sb3_complementary.multitask:MultiTaskEnv",
        budget=budget,
        hyperparams=TINY_HYPERPARAMS,
        reference=ReferenceScore(9.0, "test"),
        env_kwargs=env_kwargs,
        eval_env_kwargs=eval_env_kwargs,
    )


def run(entry, episodes, fraction, contender="dqn", seed=0, algo="stable_baselines3:DQN"):
    spec = RunSpec(
        contender=Contender(contender, algo),
        entry=entry,
        seed=seed,
        evaluation=EvalSettings(fraction=fraction, episodes=episodes),
    )
    record = execute_run(spec)
    assert record["status"] == "done", record["traceback"]
    return record


@pytest.mark.usefixtures("constant_family")
def test_runner_evaluates_every_task_in_turn_and_the_split_is_exact():
    """Training is sequential; evaluation is round-robin on its own env: episode i ran task i mod K."""
    entry = multitask_entry(
        {"tasks": "constant", "schedule": "sequential", "block_steps": 30},
        {"schedule": "round_robin", "block_steps": None},
        budget=90,
    )
    record = run(entry, episodes=7, fraction=1 / 3)
    assert record["env"]["eval_env_kwargs"] == {"schedule": "round_robin", "block_steps": None}
    assert record["curve"]["returns"][0] == [3.0, 6.0, 9.0, 3.0, 6.0, 9.0, 3.0]
    curve = per_task_curve(record)
    assert curve.task_names == ("pays_1", "pays_2", "pays_3") and curve.schedule == "sequential"
    np.testing.assert_array_equal(curve.scores, [[3, 6, 9]] * 3)
    lost = forgetting(curve)
    end = record["curve"]["timesteps"][-1]  # the budget, rounded up to DQN's train_freq
    expected = [("pays_1", 30, 0), ("pays_2", 60, 0), ("pays_3", end, 0)]
    assert [(f.name, f.trained_at, f.forgetting) for f in lost] == expected


@pytest.mark.usefixtures("constant_family")
def test_runner_records_replay_task_shares_of_weighted_replays():
    """A weighted replay records per-task sample and data shares at every eval point; DQN's plain buffer has none."""
    entry = multitask_entry(
        {"tasks": "constant", "schedule": "sequential", "block_steps": 30},
        {"schedule": "round_robin", "block_steps": None},
        budget=90,
    )
    record = run(entry, episodes=3, fraction=1 / 3, contender="per", algo="sb3_complementary:PrioritizedDQN")
    shares = record["curve"]["task_shares"]
    assert len(shares) == len(record["curve"]["timesteps"]) == 3
    # Untrained PER: every transition keeps the initial score, so the draws are uniform.
    assert record["curve"]["ess_fraction"] == pytest.approx([1.0] * 3)
    assert shares[0] == {"0": [1.0, 1.0]}
    # No training yet (learning_starts): every transition keeps the initial score, so draws follow the data.
    for point, n_tasks in zip(shares[1:], (2, 3), strict=True):
        assert sorted(point) == [str(k) for k in range(n_tasks)]
        for sample_share, data_share in point.values():
            assert sample_share == pytest.approx(data_share)
    assert sum(data for _, data in shares[2].values()) == pytest.approx(1.0)
    dqn_record = run(entry, episodes=3, fraction=1 / 3)
    assert "task_shares" not in dqn_record["curve"]

    # The study reads them back per task (columns in the evaluation env's task order) and tabulates them.
    curve = per_task_curve(record)
    assert curve.replay_shares is not None and curve.replay_shares.shape == (3, 3, 2)
    np.testing.assert_allclose(curve.replay_shares[0], [[1.0, 1.0], [0.0, 0.0], [0.0, 0.0]])
    assert per_task_curve(dqn_record).replay_shares is None
    table = summary_markdown([curve, per_task_curve(dqn_record)])
    assert "who the replay serves at the end" in table
    final = curve.replay_shares[-1]
    expected_row = "| per | " + " | ".join(f"{a:.2f} / {b:.2f}" for a, b in final) + " |"
    assert expected_row in table.splitlines()
    share_table = table.split("who the replay serves")[1].split("###")[0]
    assert not any(line.startswith("| dqn |") for line in share_table.splitlines())


def test_forgetting_on_a_hand_made_curve():
    curve = PerTaskCurve(
        run_id="r",
        contender="c",
        entry="e",
        seed=0,
        timesteps=np.array([50, 100, 150, 200]),
        task_ids=(0, 1),
        task_names=("a", "b"),
        scores=np.array([[10.0, 0.0], [40.0, 1.0], [30.0, 2.0], [25.0, 50.0]]),
        schedule="sequential",
        block_steps=90,
        train_order=(1, 0),  # curriculum: b first, then a
    )
    lost = forgetting(curve)
    # b's block ends at 90 -> first eval at or after it is 100 (score 1); at the end b scores 50: it improved.
    # a's block ends at 180 -> eval at 200, which is also the end: nothing forgotten.
    assert [(f.name, f.trained_at, f.after, f.end, f.forgetting) for f in lost] == [
        ("b", 100, 1.0, 50.0, -49.0),
        ("a", 200, 25.0, 25.0, 0.0),
    ]
    with pytest.raises(ValueError, match="needs the sequential schedule"):
        forgetting(replace(curve, schedule="uniform"))


def test_study_matrix_is_the_documented_protocol():
    matrix = load_matrix(default_matrix_path("multitask.yml"))
    # Its ComplementaryDQN contender ran the influence signal, removed after commit 8cac570.
    assert [c.name for c in matrix.contenders] == ["dqn", "per"]
    assert matrix.seeds == (0, 1, 2, 3, 4)
    uniform, sequential = matrix.suite
    zoo = zoo_hyperparams("CartPole-v1").model_kwargs
    assert uniform.hyperparams.model_kwargs == zoo  # rl-zoo3's CartPole-v1 entry, unchanged
    assert sequential.hyperparams.model_kwargs == {**zoo, "buffer_size": 50_000}
    for entry in matrix.suite:
        assert entry.env_id == "sb3_complementary.multitask:MultiTaskEnv"
        assert entry.eval_env_dict()["env_kwargs"]["schedule"] == "round_robin"
        assert matrix.evaluation.episodes % 5 == 0  # the same number of episodes for every task
    assert uniform.env_kwargs["schedule"] == "uniform"
    assert sequential.env_kwargs["schedule"] == "sequential"
    blocks = sequential.env_kwargs["block_steps"]
    eval_points = matrix.evaluation.timesteps(sequential.budget)
    assert sequential.budget == 5 * blocks and all(k * blocks in eval_points for k in range(1, 6))


def test_study_entries_run_and_summarise(tmp_path):
    """Both study entries, shrunk (budget, blocks; no gradient step), run through the runner and into the tables."""
    matrix = load_matrix(default_matrix_path("multitask.yml"))
    runs = tmp_path / "runs"
    for entry in matrix.suite:
        kwargs = dict(entry.env_kwargs)
        if "block_steps" in kwargs:
            kwargs["block_steps"] = 60
        small = replace(entry, budget=300, env_kwargs=kwargs)
        for contender in ("dqn", "per"):
            write_run_file(runs, run(small, episodes=5, fraction=0.2, contender=contender))
    curves = load_curves(runs)
    assert len(curves) == 4 and all(c.scores.shape == (5, 5) for c in curves)
    text = summary_markdown(curves)
    assert "### CartPole-family-uniform: final score per task" in text
    assert "### CartPole-family-sequential: forgetting" in text
    assert "CartPole-family-uniform: forgetting" not in text
    assert text.count("| dqn |") == 3 and text.count("| per |") == 3
    paths = plot_per_task_curves(curves, tmp_path / "plots")
    names = sorted(p.name for p in paths)
    assert names == ["per_task_CartPole-family-sequential.png", "per_task_CartPole-family-uniform.png"]
    assert main(["--runs", str(runs), "--out", str(tmp_path / "per_task.md")]) == 0
    assert (tmp_path / "per_task.md").read_text().startswith("### ")
    assert main(["--runs", str(tmp_path / "empty")]) == 1


def test_per_task_curve_refuses_what_it_cannot_split():
    record = {
        "run_id": "x",
        "status": "done",
        "env": {"name": "e", "env_id": "CartPole-v1", "env_kwargs": {}, "wrappers": []},
    }
    with pytest.raises(ValueError, match="is not a MultiTaskEnv"):
        per_task_curve(record)
    record["env"] = {
        **record["env"],
        "env_id": "sb3_complementary.multitask:MultiTaskEnv",
        "env_kwargs": {"tasks": "cartpole"},
    }
    with pytest.raises(ValueError, match="need a round-robin evaluation env"):
        per_task_curve(record)


def test_old_entries_are_unchanged_by_eval_env_kwargs(tmp_path: Path):
    """A suite entry without eval_env_kwargs records and measures exactly what it did before the key existed."""
    entry = load_matrix(default_matrix_path("default.yml")).suite[0]
    assert entry.eval_env_kwargs is None
    assert "eval_env_kwargs" not in entry.to_dict()
    assert entry.eval_env_dict() == entry.env_dict()
