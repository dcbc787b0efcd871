"""The sb3-complementary CLI: train / enjoy in subprocesses, -optimize on SQLite, rl-zoo3's dqn, bad input."""

import importlib
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import optuna
import pytest
import yaml
from stable_baselines3 import DQN
from stable_baselines3.common.env_util import make_vec_env

from sb3_complementary import (
    ComplementaryDQN,
    ComplementaryHerReplayBuffer,
    ComplementarySAC,
    PrioritizedDQN,
    PrioritizedHerReplayBuffer,
)
from sb3_complementary.zoo import register_algorithms
from sb3_complementary.zoo.cli import main
from sb3_complementary.zoo.experiment import ZooExperimentManager

#: Train long enough for gradient steps (CartPole's entry trains every 256 steps) and one evaluation.
SHORT = ["-n", "300", "--seed", "1", "--num-threads", "1", "-params", "learning_starts:100"]


def run_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``python -m sb3_complementary.zoo ARGS`` in a subprocess (headless, one thread)."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "SDL_VIDEODRIVER": "dummy", "MPLBACKEND": "Agg"}
    process = subprocess.run(
        [sys.executable, "-m", "sb3_complementary.zoo", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert process.returncode == 0, f"exit {process.returncode}\n{process.stdout[-3000:]}\n{process.stderr[-3000:]}"
    return process


def test_train_then_load_then_enjoy(tmp_path: Path) -> None:
    logs = tmp_path / "zoo-logs"
    run_cli("train", "--algo", "complementary_dqn", "--env", "CartPole-v1", "-f", str(logs),
            "--eval-freq", "200", "--eval-episodes", "2", *SHORT, cwd=tmp_path)  # fmt: skip
    run = logs / "complementary_dqn" / "CartPole-v1_1"
    model = ComplementaryDQN.load(run / "CartPole-v1.zip")
    assert model.num_timesteps >= 300 and model._n_updates > 0
    assert (run / "evaluations.npz").is_file()  # EvalCallback ran
    config = dict(yaml.load((run / "CartPole-v1" / "config.yml").read_text(), Loader=yaml.UnsafeLoader))
    assert config["contribution"] == "laber" and config["learning_starts"] == 100  # packaged file + -params
    enjoy = run_cli("enjoy", "--algo", "complementary_dqn", "--env", "CartPole-v1", "-f", str(logs),
                    "--no-render", "-n", "200", "--num-threads", "1", cwd=tmp_path)  # fmt: skip
    assert "Loading" in enjoy.stdout and "Mean reward" in enjoy.stdout
    # The packaged knobs reached the model: LaBER, the constructor's defaults.
    assert (model.contribution, model.uniform_fraction, model.score_floor, model.epsilon) == ("laber", 0.0, 0.0, 1e-6)


def test_train_a_her_entry_then_enjoy(tmp_path: Path) -> None:
    """The packaged goal entry (replay_buffer_class: HerReplayBuffer) trains and replays through our HER buffer."""
    logs = tmp_path / "zoo-logs"
    run_cli("train", "--algo", "prioritized_dqn", "--env", "BitFlipping-15-v0", "-f", str(logs),
            "--eval-freq", "-1", *SHORT, cwd=tmp_path)  # fmt: skip
    run = logs / "prioritized_dqn" / "BitFlipping-15-v0_1"
    config = dict(yaml.load((run / "BitFlipping-15-v0" / "config.yml").read_text(), Loader=yaml.UnsafeLoader))
    assert config["replay_buffer_class"] == "HerReplayBuffer"
    model = PrioritizedDQN.load(run / "BitFlipping-15-v0.zip", env=make_vec_env("BitFlipping-15-v0"))
    assert model.replay_buffer_class is PrioritizedHerReplayBuffer and model.num_timesteps >= 300
    enjoy = run_cli("enjoy", "--algo", "prioritized_dqn", "--env", "BitFlipping-15-v0", "-f", str(logs),
                    "--no-render", "-n", "50", "--num-threads", "1", cwd=tmp_path)  # fmt: skip
    assert "Loading" in enjoy.stdout


@pytest.mark.skipif(importlib.util.find_spec("gymnasium_robotics") is None, reason="needs the robotics extra")
def test_train_the_fetch_reach_her_entry_then_enjoy(tmp_path: Path) -> None:
    """SAC + HER on FetchReach as rl-zoo3 runs it: --gym-packages registers the env, VecNormalize wraps it."""
    logs = tmp_path / "zoo-logs"
    run_cli("train", "--algo", "complementary_sac", "--env", "FetchReach-v4", "--gym-packages", "gymnasium_robotics",
            "-f", str(logs), "--eval-freq", "-1", "-n", "150", "--seed", "1", "--num-threads", "1",
            "-params", "learning_starts:60", "buffer_size:1000", "batch_size:32", cwd=tmp_path)  # fmt: skip
    run = logs / "complementary_sac" / "FetchReach-v4_1"
    assert (run / "FetchReach-v4" / "vecnormalize.pkl").is_file()  # the entry's normalize: True
    importlib.import_module("gymnasium_robotics")  # registers FetchReach-v4 in this process too
    model = ComplementarySAC.load(run / "FetchReach-v4.zip", env=make_vec_env("FetchReach-v4"))
    assert model.replay_buffer_class is ComplementaryHerReplayBuffer and model._n_updates > 0
    enjoy = run_cli("enjoy", "--algo", "complementary_sac", "--env", "FetchReach-v4", "--gym-packages",
                    "gymnasium_robotics", "-f", str(logs), "--no-render", "-n", "60", "--num-threads", "1",
                    cwd=tmp_path)  # fmt: skip
    assert "Loading" in enjoy.stdout


def test_optimize_two_trials_on_sqlite(tmp_path: Path) -> None:
    storage = tmp_path / "studies" / "tune.db"
    run_cli("train", "--algo", "complementary_dqn", "--env", "CartPole-v1", "-optimize", "--n-trials", "2",
            "-n", "300", "--storage", str(storage), "--study-name", "cdqn", "--sampler", "random",
            "--pruner", "none", "--eval-episodes", "2", "--no-optim-plots", "--seed", "2",
            "-f", str(tmp_path / "logs"), "--num-threads", "1", cwd=tmp_path)  # fmt: skip
    study = optuna.load_study(study_name="cdqn", storage=f"sqlite:///{storage}")
    assert len(study.trials) == 2
    complete = [trial for trial in study.trials if trial.state == optuna.trial.TrialState.COMPLETE]
    assert complete, [trial.state for trial in study.trials]
    for trial in study.trials:
        assert {"alpha", "uniform_fraction", "extractor_lr_ratio", "extractor_refresh_interval",
                "learning_rate", "batch_size_pow"} <= set(trial.params)  # fmt: skip
    # --trial-id (0 included, which rl-zoo3 itself skips) loads a stored trial through the registered converter.
    register_algorithms()
    experiment = ZooExperimentManager(
        None, "complementary_dqn", "CartPole-v1", str(tmp_path / "logs"), storage=str(storage), study_name="cdqn",
        trial_id=0, verbose=0,
    )  # fmt: skip
    hyperparams, _ = experiment.read_hyperparameters()
    first = study.trials[0].params
    assert hyperparams["alpha"] == first["alpha"]
    assert hyperparams["batch_size"] == 2 ** first["batch_size_pow"]


def test_rl_zoo3_own_dqn_trains_through_our_entry_point(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    status = main(["train", "--algo", "dqn", "--env", "CartPole-v1", "-f", "logs", "--eval-freq", "-1", *SHORT])
    assert status == 0
    run = tmp_path / "logs" / "dqn" / "CartPole-v1_1"
    model = DQN.load(run / "CartPole-v1.zip")
    assert type(model) is DQN and model._n_updates > 0
    config = dict(yaml.load((run / "CartPole-v1" / "config.yml").read_text(), Loader=yaml.UnsafeLoader))
    assert "alpha" not in config and config["gradient_steps"] == 128  # rl-zoo3's own dqn.yml


def test_unknown_algo_lists_the_valid_ones(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["train", "--algo", "complementary_dq", "--env", "CartPole-v1"]) == 2
    err = capsys.readouterr().err
    assert "unknown --algo 'complementary_dq'" in err and "Did you mean complementary_dqn" in err
    assert "algorithms of sb3-complementary: complementary_dqn, prioritized_dqn" in err
    assert "algorithms of rl-zoo3: a2c," in err and "dqn" in err.split("rl-zoo3:")[1]
    assert main(["enjoy", "--algo=nope"]) == 2


def test_bad_conf_file_and_missing_env_exit_with_a_message(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    conf = tmp_path / "mine.yml"
    conf.write_text("CartPole-v1:\n  n_timesteps: 100\n  policy: MlpPolicy\n  extractor_lr_ration: 0.3\n")
    base = ["train", "--conf-file", str(conf), "-f", str(tmp_path / "logs"), "--eval-freq", "-1"]
    assert main([*base, "--env", "CartPole-v1"]) == 2
    assert "unknown hyperparameter for ComplementaryDQN: 'extractor_lr_ration'" in capsys.readouterr().err
    assert main([*base, "--env", "Acrobot-v1"]) == 2
    assert "no entry for Acrobot-v1. Envs with entries: CartPole-v1" in capsys.readouterr().err


def test_commands_and_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    assert "train,enjoy,record-video" in capsys.readouterr().out
    assert main(["plot"]) == 2
    assert "unknown command 'plot'" in capsys.readouterr().err
    with pytest.raises(SystemExit) as info:  # rl-zoo3's own parser answers -h
        main(["train", "-h"])
    assert info.value.code == 0
    assert "--conf-file" in capsys.readouterr().out


def test_defaults_go_in_front_so_user_flags_win(monkeypatch: pytest.MonkeyPatch) -> None:
    """--algo defaults to complementary_dqn; enjoy/record-video read -f logs for our algorithms only."""
    from sb3_complementary.zoo import cli

    seen: list[list[str]] = []
    for command in ("enjoy", "record-video", "train"):
        monkeypatch.setitem(cli.COMMANDS, command, lambda: seen.append(list(sys.argv)))
    assert main(["enjoy", "--env", "CartPole-v1"]) == 0
    assert seen[-1] == ["sb3-complementary enjoy", "-f", "logs", "--algo", "complementary_dqn", "--env", "CartPole-v1"]
    assert main(["record-video", "--algo", "dqn"]) == 0
    assert seen[-1] == ["sb3-complementary record-video", "--algo", "dqn"]  # rl-zoo3's own defaults
    assert main(["train", "--env", "CartPole-v1", "-n", "5"]) == 0
    assert seen[-1] == ["sb3-complementary train", "--algo", "complementary_dqn", "--env", "CartPole-v1", "-n", "5"]
