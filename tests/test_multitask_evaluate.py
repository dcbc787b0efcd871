"""evaluate_multitask and its command line: one row per task, aggregates, chart, JSON, clear errors."""

import json

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces
from scipy.stats import trim_mean
from stable_baselines3 import DQN

from sb3_complementary import ComplementaryDQN, MultiTaskEnv, evaluate_multitask
from sb3_complementary.multitask import MultiTaskEvaluation, get_family
from sb3_complementary.multitask.evaluate import main
from sb3_complementary.zoo.cli import main as console_main
from tests.conftest import TINY_DQN, TINY_EXTRACTOR


class AlwaysPush:
    """A trivial model: always the same action, whatever it observes."""

    def __init__(self, observation_space: spaces.Space, action: int = 1) -> None:
        self.observation_space = observation_space
        self.action = action

    def predict(self, observation, state=None, episode_start=None, deterministic=True):
        return np.full(len(observation), self.action), state


def test_one_row_per_variant_with_aggregates(tmp_path):
    family = get_family("cartpole")
    model = AlwaysPush(family.make(0).observation_space)
    result = evaluate_multitask(model, "cartpole", n_eval_episodes=4, seed=3, plot_path=tmp_path / "chart.png")
    assert isinstance(result, MultiTaskEvaluation)
    assert [t.name for t in result.tasks] == family.names and [t.task_id for t in result.tasks] == [0, 1, 2, 3, 4]
    assert all(len(t.returns) == 4 and len(t.lengths) == 4 for t in result.tasks)
    # Pushing right always topples the pole within a few steps; the short pole falls fastest.
    assert all(1 <= t.mean < 30 for t in result.tasks)
    assert result.tasks[1].mean < result.tasks[0].mean
    assert result.mean == pytest.approx(np.mean([t.mean for t in result.tasks]))
    assert result.iqm == pytest.approx(trim_mean(np.concatenate([t.returns for t in result.tasks]), 0.25))
    table = str(result)
    assert table == result.format_table() and "weak_force" in table and "aggregate IQM" in table
    assert len(table.splitlines()) == 3 + 5 + 2
    assert (tmp_path / "chart.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    json.dumps(result.to_dict())
    # Fixed evaluation set: the same call gives the same numbers.
    again = evaluate_multitask(model, "cartpole", n_eval_episodes=4, seed=3)
    assert [t.returns for t in again.tasks] == [t.returns for t in result.tasks]


def test_explicit_envs_mapping_and_multitask_env():
    model = AlwaysPush(spaces.Box(-np.inf, np.inf, (4,)), action=0)
    as_mapping = evaluate_multitask(
        model, {"plain": lambda: gym.make("CartPole-v1"), "heavy": lambda: get_family("cartpole").make("heavy_pole")}, 2
    )
    assert [t.name for t in as_mapping.tasks] == ["plain", "heavy"] and as_mapping.source == "custom"
    as_list = evaluate_multitask(model, [gym.make("CartPole-v1")], n_eval_episodes=2)
    assert [t.name for t in as_list.tasks] == ["task_0"]
    subset = MultiTaskEnv("cartpole", variants=["weak_force", "default"])
    result = evaluate_multitask(model, subset, n_eval_episodes=2)
    assert [(t.task_id, t.name) for t in result.tasks] == [(4, "weak_force"), (0, "default")]
    assert result.source == "cartpole"


def test_model_trained_with_the_one_hot_block_is_matched(tmp_path):
    env = MultiTaskEnv("cartpole", schedule="round_robin", task_id_in_obs=True)
    model = DQN("MlpPolicy", env, **{**TINY_DQN, "buffer_size": 100})
    result = evaluate_multitask(model, "cartpole", n_eval_episodes=1)
    assert len(result.tasks) == 5
    with pytest.raises(ValueError, match=r"(?s)the model observes Box\(.*\(9,\).*but the tasks give Box\(.*\(4,\)"):
        evaluate_multitask(model, "cartpole", n_eval_episodes=1, task_id_in_obs=False)
    with pytest.raises(ValueError, match="the model observes"):
        evaluate_multitask(model, "mountaincar", n_eval_episodes=1)


def test_bad_inputs():
    model = AlwaysPush(spaces.Box(-np.inf, np.inf, (4,)))
    with pytest.raises(ValueError, match=r"unknown task family 'cartpol'.*'cartpole'"):
        evaluate_multitask(model, "cartpol")
    with pytest.raises(ValueError, match="n_eval_episodes must be a positive int"):
        evaluate_multitask(model, "cartpole", n_eval_episodes=0)
    with pytest.raises(ValueError, match="family_or_envs must be"):
        evaluate_multitask(model, 42)  # type: ignore[arg-type]


def test_command_line(tmp_path, capsys):
    env = MultiTaskEnv("cartpole", schedule="round_robin")
    model = ComplementaryDQN("MlpPolicy", env, **TINY_DQN, **TINY_EXTRACTOR)
    model.save(tmp_path / "model.zip")
    argv = ["--model", str(tmp_path / "model.zip"), "--algo", "complementary_dqn", "--family", "cartpole"]
    extra = ["-n", "2", "--variants", "short_pole,0", "--plot", str(tmp_path / "bar.png")]
    extra += ["--json", str(tmp_path / "r.json")]
    assert main(argv + extra) == 0
    out = capsys.readouterr().out
    assert "short_pole" in out and "default" in out and "heavy_pole" not in out and "aggregate mean" in out
    saved = json.loads((tmp_path / "r.json").read_text())
    assert [t["name"] for t in saved["tasks"]] == ["short_pole", "default"] and len(saved["tasks"][0]["returns"]) == 2
    assert (tmp_path / "bar.png").exists()
    for bad, message in (
        (["--algo", "no_such_algo"], "unknown algorithm 'no_such_algo'"),
        (["--family", "acrobot"], "unknown task family 'acrobot'"),
        (["--variants", "tall_pole"], "unknown variant 'tall_pole'"),
    ):
        with pytest.raises(SystemExit) as exit_info:
            main(argv + bad)
        assert exit_info.value.code == 2
        assert message in capsys.readouterr().err


def test_console_script_subcommand(tmp_path, capsys):
    """``sb3-complementary evaluate-multitask`` is the same command."""
    env = MultiTaskEnv("mountaincar", schedule="round_robin", task_id_in_obs=True)
    DQN("MlpPolicy", env, **{**TINY_DQN, "buffer_size": 100}).save(tmp_path / "dqn.zip")
    argv = ["evaluate-multitask", "--model", str(tmp_path / "dqn.zip"), "--algo", "dqn", "--family", "mountaincar"]
    assert console_main([*argv, "-n", "1", "--variants", "strong_engine"]) == 0
    assert "strong_engine" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        console_main([*argv, "--variants", "nope"])
    assert "sb3-complementary evaluate-multitask: error: unknown variant 'nope'" in capsys.readouterr().err
