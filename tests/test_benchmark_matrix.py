"""Matrix YAML parsing and validation, and the zoo hyperparameter parser."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from benchmarks.harness.envs import make_env
from benchmarks.harness.hyperparams import (
    build_hyperparams,
    constructor_kwargs,
    parse_kwargs_string,
    zoo_hyperparams,
)
from benchmarks.harness.matrix_yaml import default_matrix_path, load_matrix, parse_matrix, read_title
from benchmarks.harness.normalize import bit_flipping_optimal_return
from benchmarks.harness.seeds import parse_seeds


def minimal(**overrides: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "seeds": "0-1",
        "contenders": {"dqn": {"algo": "dqn"}},
        "suite": [{"env": "CartPole-v1", "budget": 1000}],
    }
    doc.update(overrides)
    return doc


def test_default_matrix_matches_protocol() -> None:
    matrix = load_matrix()
    names = [c.name for c in matrix.contenders]
    # Every ComplementaryDQN contender of this study ran a label signal or lowest-score eviction,
    # removed in the redesign (commit 8cac570 is the last to have them): the baselines remain.
    assert names == ["dqn", "per"]
    budgets = {e.name: e.budget for e in matrix.suite}
    assert budgets["CartPole-v1"] == 50_000
    assert budgets["MountainCar-v0"] == 120_000
    assert budgets["LunarLander-v3"] == 100_000
    assert matrix.seeds == tuple(range(10))
    assert matrix.evaluation.fraction == 0.05 and matrix.evaluation.episodes == 10
    assert len(matrix.evaluation.timesteps(50_000)) == 20
    by_name = {c.name: c for c in matrix.contenders}
    assert by_name["dqn"].algo == "stable_baselines3:DQN"
    assert by_name["per"].algo == "sb3_complementary:PrioritizedDQN"
    # The sparse task: reference score is the closed-form optimum.
    sparse = {e.name: e for e in matrix.suite}["BitFlipping-10"]
    assert sparse.reference.score == pytest.approx(bit_flipping_optimal_return(10))
    assert sparse.hyperparams.policy == "MlpPolicy"


def test_smoke_matrix_loads() -> None:
    matrix = load_matrix(default_matrix_path("smoke.yml"))
    assert [e.budget for e in matrix.suite] == [2000]
    assert matrix.seeds == (0,)


def test_sac_matrix_reads_zoo_sac_entries() -> None:
    matrix = load_matrix(default_matrix_path("sac.yml"))
    # Its ComplementarySAC contender ran the influence signal, removed after 8cac570.
    assert [c.algo for c in matrix.contenders] == ["stable_baselines3:SAC", "sb3_complementary:PrioritizedSAC"]
    entries = {e.name: e for e in matrix.suite}
    pendulum, lander = entries["Pendulum-v1"], entries["LunarLanderContinuous-v3"]
    assert pendulum.hyperparams.source.endswith("hyperparams/sac.yml [Pendulum-v1]")
    assert pendulum.hyperparams.model_kwargs == {"learning_rate": 1e-3}
    assert pendulum.reference.score == pytest.approx(-156.995)
    assert lander.hyperparams.model_kwargs["learning_rate"] == "lin_7.3e-4"  # the record stays JSON-safe
    assert lander.reference.score == pytest.approx(260.390)
    assert matrix.seeds == tuple(range(5))


def test_zoo_linear_schedule_becomes_an_sb3_schedule() -> None:
    kwargs = constructor_kwargs(zoo_hyperparams("LunarLanderContinuous-v3", "sac"))
    schedule = kwargs["learning_rate"]
    assert schedule(1.0) == pytest.approx(7.3e-4)
    assert schedule(0.25) == pytest.approx(7.3e-4 / 4)
    assert schedule(0.0) == 0.0
    with pytest.raises(ValueError, match="cannot parse linear schedule 'lin_fast'"):
        constructor_kwargs(build_hyperparams({"learning_rate": "lin_fast"}, "test"))


def test_zoo_unknown_algorithm_file() -> None:
    with pytest.raises(ValueError, match=r"no hyperparameter file for algorithm 'dqm'.*'dqn'"):
        zoo_hyperparams("CartPole-v1", "dqm")
    with pytest.raises(ValueError, match="zoo_algo must be"):
        parse_matrix(minimal(zoo_algo=["sac"]))


def test_runs_are_seed_major() -> None:
    doc = minimal(
        contenders={"dqn": {"algo": "dqn"}, "other": {"algo": "stable_baselines3:DQN"}},
        suite=[{"env": "CartPole-v1", "budget": 1000}, {"env": "MountainCar-v0", "budget": 1000}],
    )
    runs = [r.run_id for r in parse_matrix(doc).runs()]
    assert runs[:4] == [
        "dqn__CartPole-v1__s0",
        "other__CartPole-v1__s0",
        "dqn__MountainCar-v0__s0",
        "other__MountainCar-v0__s0",
    ]
    assert all(r.endswith("s1") for r in runs[4:])


def test_zoo_hyperparameters_are_shared_and_stripped() -> None:
    entry = parse_matrix(minimal()).suite[0]
    hp = entry.hyperparams
    assert hp.policy == "MlpPolicy"
    assert "n_timesteps" not in hp.model_kwargs and "policy" not in hp.model_kwargs
    assert hp.stripped == {"n_timesteps": 50_000}
    assert hp.model_kwargs["policy_kwargs"] == {"net_arch": [256, 256]}
    assert hp.model_kwargs["train_freq"] == 256
    assert "CartPole-v1" in hp.source


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("dict(net_arch=[256, 256])", {"net_arch": [256, 256]}),
        (
            "dict(net_arch=dict(pi=[64], qf=[400, 300]), n_critics=2)",
            {"net_arch": {"pi": [64], "qf": [400, 300]}, "n_critics": 2},
        ),
        ("dict(activation_fn=nn.ReLU, log_std_init=-2)", {"activation_fn": "torch.nn.ReLU", "log_std_init": -2}),
        ("{'net_arch': (64, 64)}", {"net_arch": [64, 64]}),
    ],
)
def test_kwargs_string_parser(text: str, expected: Any) -> None:
    assert parse_kwargs_string(text) == expected


@pytest.mark.parametrize(
    "text",
    ["__import__('os').system('true')", "dict(a=open('x'))", "dict(**x)", "dict(a=nn.Module)", "dict(a=", "lambda: 1"],
)
def test_kwargs_string_parser_refuses_code(text: str) -> None:
    with pytest.raises(ValueError, match="cannot parse kwargs string"):
        parse_kwargs_string(text)


def test_constructor_kwargs_resolve_torch_names() -> None:
    import torch

    hp = build_hyperparams({"policy_kwargs": "dict(activation_fn=nn.Tanh)", "train_freq": [1, "episode"]}, "test")
    kwargs = constructor_kwargs(hp)
    assert kwargs["policy_kwargs"]["activation_fn"] is torch.nn.Tanh
    assert kwargs["train_freq"] == (1, "episode")
    assert hp.model_kwargs["policy_kwargs"]["activation_fn"] == "torch.nn.Tanh"  # record stays JSON-safe


def test_zoo_unknown_entry() -> None:
    with pytest.raises(ValueError, match="no tuned DQN hyperparameters for 'Pendulum-v1'"):
        zoo_hyperparams("Pendulum-v1")


@pytest.mark.parametrize(
    ("spec", "expected"),
    [("0-9", tuple(range(10))), ("0-2,5", (0, 1, 2, 5)), ("3", (3,)), ([4, 1, 1], (1, 4)), (2, (2,))],
)
def test_parse_seeds(spec: Any, expected: tuple[int, ...]) -> None:
    assert parse_seeds(spec) == expected


@pytest.mark.parametrize("spec", ["a-b", "5-2", "", [], [1.5], True, "-1"])
def test_parse_seeds_malformed(spec: Any) -> None:
    with pytest.raises(ValueError, match="malformed seeds"):
        parse_seeds(spec)


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        (minimal(suite=[{"env": "NoSuchEnv-v9", "budget": 10}]), "suite entry 'NoSuchEnv-v9': unknown environment id"),
        (
            minimal(suite=[{"env": "nosuchmodule:Env", "budget": 10}]),
            "suite entry 'nosuchmodule:Env': unknown environment",
        ),
        (minimal(contenders={"mine": {"algo": "magic"}}), "unknown contender contender 'mine'"),
        (minimal(contenders={"mine": {"algo": "nosuchpkg.algos:Magic"}}), "unknown contender contender 'mine': module"),
        (minimal(contenders={"mine": {}}), "contender 'mine': 'algo'"),
        (minimal(contenders={"bad__name": {"algo": "dqn"}}), "name 'bad__name'"),
        (minimal(contenders={"dqn": {"algo": "dqn", "kwarg": {}}}), r"contender 'dqn': unknown key\(s\) \['kwarg'\]"),
        (
            minimal(contenders={"dqn": {"algo": "dqn", "kwargs": {"learning_rate": 0.1}}}),
            r"contender 'dqn': kwargs \['learning_rate'\] are shared hyperparameters",
        ),
        (
            minimal(suite=[{"env": "CartPole-v1", "budjet": 10}]),
            r"suite entry 'CartPole-v1': unknown key\(s\) \['budjet'\]",
        ),
        (minimal(suite=[{"env": "CartPole-v1", "budget": -5}]), "suite entry 'CartPole-v1': 'budget'"),
        (minimal(suite=[{"env": "Pendulum-v1", "budget": 100}]), "suite entry 'Pendulum-v1': rl-zoo3 has no tuned"),
        (
            minimal(zoo_algo="sac", suite=[{"env": "Acrobot-v1", "budget": 100}]),
            "suite entry 'Acrobot-v1': rl-zoo3 has no tuned SAC hyperparameters",
        ),
        (
            minimal(suite=[{"env": "Pendulum-v1", "budget": 100, "hyperparams": {"gamma": 0.9}}]),
            "suite entry 'Pendulum-v1': no rl-zoo3 DQN reference score",
        ),
        (
            minimal(suite=[{"env": "Pendulum-v1", "budget": 100, "hyperparams": {"gamma": 0.9}, "r_ref": 1.0}]),
            "needs an 'r_ref_source'",
        ),
        (
            minimal(suite=[{"env": "CartPole-v1", "budget": 100, "wrappers": ["nosuch:Wrapper"]}]),
            "wrapper 'nosuch:Wrapper' cannot be imported",
        ),
        (minimal(suite=[{"env": "CartPole-v1", "budget": 100}, {"env": "CartPole-v1", "budget": 100}]), "duplicate"),
        (minimal(suite=[]), "'suite' must be a non-empty list"),
        (
            minimal(suite=[{"env": "CartPole-v1", "budget": 100, "eval_task": "latest"}]),
            "suite entry 'CartPole-v1': 'eval_task' must be 'training' \\(or absent\\), got 'latest'",
        ),
        (minimal(eval={"fraction": 0.3}), "fraction must divide 1"),
        (minimal(eval={"fraction": "often"}), "fraction must be a number"),
        (minimal(version=2), "version 2 is not supported"),
        (minimal(colour="blue"), r"unknown key\(s\) \['colour'\]"),
        (
            {"contenders": {"dqn": {"algo": "dqn"}}, "suite": [{"env": "CartPole-v1", "budget": 1}]},
            "'seeds' is required",
        ),
        (["not", "a", "mapping"], "top level must be a mapping"),
    ],
)
def test_invalid_matrices(doc: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_matrix(doc)


def test_malformed_yaml_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "broken.yml"
    path.write_text("contenders: {dqn: [unclosed\n")
    with pytest.raises(ValueError, match=r"broken\.yml is not valid YAML"):
        load_matrix(path)
    path.write_text(yaml.safe_dump(minimal(suite=[{"env": "Nope-v0", "budget": 1}])))
    with pytest.raises(ValueError, match=r"broken\.yml.*'Nope-v0'"):
        load_matrix(path)


def test_select() -> None:
    doc = minimal(
        seeds="0-4",
        contenders={"dqn": {"algo": "dqn"}, "other": {"algo": "stable_baselines3:DQN"}},
        suite=[{"env": "CartPole-v1", "budget": 1000}, {"env": "MountainCar-v0", "budget": 1000}],
    )
    matrix = parse_matrix(doc).select(contenders=["other"], envs=["MountainCar-v0"], seeds=[1, 3])
    assert [r.run_id for r in matrix.runs()] == ["other__MountainCar-v0__s1", "other__MountainCar-v0__s3"]
    with pytest.raises(ValueError, match=r"unknown contender\(s\) \['nope'\]"):
        parse_matrix(doc).select(contenders=["nope"])
    with pytest.raises(ValueError, match="unknown suite"):
        parse_matrix(doc).select(envs=["Nope-v0"])
    with pytest.raises(ValueError, match=r"seed\(s\) \[7\] are not in"):
        parse_matrix(doc).select(seeds=[7])


def test_custom_entry_point_and_explicit_hyperparams() -> None:
    doc = minimal(
        suite=[
            {
                "name": "Bits-4",
                "env": "stable_baselines3.common.envs:BitFlippingEnv",
                "env_kwargs": {"n_bits": 4},
                "wrappers": ["gymnasium.wrappers:FlattenObservation"],
                "budget": 200,
                "hyperparams": {"policy": "MlpPolicy", "policy_kwargs": "dict(net_arch=[16])", "n_timesteps": 5},
                "r_ref": bit_flipping_optimal_return(4),
                "r_ref_source": "closed form",
            }
        ]
    )
    entry = parse_matrix(doc).suite[0]
    assert entry.name == "Bits-4"
    assert entry.hyperparams.model_kwargs == {"policy_kwargs": {"net_arch": [16]}}
    assert entry.hyperparams.stripped == {"n_timesteps": 5}
    assert entry.reference.source == "closed form"


def test_bit_flipping_optimal_return_by_enumeration() -> None:
    import itertools

    n = 5
    returns = []
    for state in itertools.product([0, 1], repeat=n):
        wrong = n - sum(state)
        returns.append(-(wrong - 1) if wrong else -1)
    assert bit_flipping_optimal_return(n) == pytest.approx(sum(returns) / len(returns))


def test_gymnasium_module_env_id_form() -> None:
    # gymnasium's own "module:EnvId": the module is imported (registering the id), then gym.make
    env = make_env("gymnasium.envs.classic_control:CartPole-v1")
    assert env.spec is not None and env.spec.id == "CartPole-v1"
    assert env.spec.max_episode_steps == 500  # the registered TimeLimit, which an entry point would lack
    entry = {
        "name": "Pole",
        "env": "gymnasium.envs.classic_control:CartPole-v1",
        "zoo_id": "CartPole-v1",
        "budget": 100,
    }
    assert parse_matrix(minimal(suite=[entry])).suite[0].env_id == "gymnasium.envs.classic_control:CartPole-v1"
    with pytest.raises(ValueError, match=r"unknown environment 'gymnasium\.envs\.classic_control:NoSuch-v0'"):
        parse_matrix(minimal(suite=[{**entry, "env": "gymnasium.envs.classic_control:NoSuch-v0"}]))


MATRICES = sorted(path.name for path in default_matrix_path("default.yml").parent.glob("*.yml"))
#: Contenders of committed matrices whose mechanism left the package: the learned strength
#: (``alpha="auto"``) is removed, so they no longer build. Their run files stay, and so do their
#: pages; the matrices keep them as the record of what ran, and a rerun refuses them.
RETIRED = {
    ("screen-progress.yml", "density-fresh-td-auto"): "alpha must be a number >= 0",
    ("study-multitask.yml", "density-fresh-td-auto"): "alpha must be a number >= 0",
}


def _build(name: str, contender: Any, entry: Any) -> Any:
    import importlib

    module, _, cls_name = contender.algo.partition(":")
    cls = getattr(importlib.import_module(module), cls_name)
    kwargs = {**constructor_kwargs(entry.hyperparams), **contender.kwargs}
    env = make_env(entry.env_id, entry.env_kwargs, entry.wrappers)
    return cls(entry.hyperparams.policy, env, _init_setup_model=False, **kwargs)


@pytest.mark.parametrize("name", MATRICES)
def test_every_contender_of_a_committed_matrix_builds(name: str) -> None:
    """
    Each contender's kwargs are knobs its class takes now: a knob of a removed mechanism (or one
    that moved into ``extractor_kwargs``) raises, so a stale matrix fails here, not hours into a run.
    The model is built on its first suite entry's env with the entry's hyperparameters (without
    allocating the buffer). A retired contender (:data:`RETIRED`) must be refused, with its reason.
    """
    matrix = load_matrix(default_matrix_path(name))
    entry = matrix.suite[0]
    for contender in matrix.contenders:
        retired = RETIRED.get((name, contender.name))
        if retired is not None:
            with pytest.raises(ValueError, match=retired):
                _build(name, contender, entry)
            continue
        model = _build(name, contender, entry)
        for key in ("contribution", "alpha", "candidate_pool", "uniform_fraction", "score_floor"):
            if key in contender.kwargs:
                assert getattr(model, key) == contender.kwargs[key], (contender.name, key)
        if "extractor_kwargs" in contender.kwargs:
            assert model.extractor_kwargs == contender.kwargs["extractor_kwargs"], contender.name


def test_every_retired_contender_is_in_its_matrix() -> None:
    """:data:`RETIRED` names contenders that exist: a renamed or dropped one must leave the list."""
    for name, contender in RETIRED:
        assert contender in {c.name for c in load_matrix(default_matrix_path(name)).contenders}, (name, contender)


def test_a_contender_with_a_removed_knob_does_not_build() -> None:
    """The check above can fail: a contender as the matrices wrote it at 8cac570 raises, naming the knob."""
    from sb3_complementary import ComplementaryDQN

    old = {"contribution": "density_ratio", "weighting": "sampling", "ratio_temperature": 1.5}
    with pytest.raises(TypeError, match="unexpected keyword argument 'weighting'"):
        ComplementaryDQN("MlpPolicy", "CartPole-v1", _init_setup_model=False, **old)


def test_every_lab_matrix_has_its_own_title() -> None:
    """The title heads the matrix's results page (``--matrix``): one line, and no two matrices share one."""
    titles = [read_title(default_matrix_path(name)) for name in MATRICES]
    assert len(set(titles)) == len(titles), titles
    assert load_matrix(default_matrix_path("smoke.yml")).title == read_title(default_matrix_path("smoke.yml"))


@pytest.mark.parametrize("title", ["", "two\nlines", 3])
def test_bad_titles_are_refused(title: Any) -> None:
    with pytest.raises(ValueError, match="title must be a one-line string"):
        parse_matrix(minimal(title=title))


def test_report_needs_a_title_from_its_matrix(tmp_path: Path) -> None:
    path = tmp_path / "untitled.yml"
    path.write_text(yaml.safe_dump(minimal()))
    with pytest.raises(ValueError, match="has no 'title'"):
        read_title(path)
