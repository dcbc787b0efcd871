"""The package's shape (docs/design.md, "Shape"): few knobs, no import cycles, small files."""

import ast
import inspect
from pathlib import Path
from typing import Any

import pytest
from sb3_contrib import QRDQN, TQC, CrossQ
from stable_baselines3 import DDPG, DQN, SAC, TD3

import sb3_complementary as sb3c

PACKAGE = Path(sb3c.__file__).parent
#: Each Complementary (and Prioritized) class and its SB3 / sb3-contrib parent.
CLASSES = {
    "ComplementaryDQN": DQN,
    "ComplementaryQRDQN": QRDQN,
    "ComplementarySAC": SAC,
    "ComplementaryTD3": TD3,
    "ComplementaryDDPG": DDPG,
    "ComplementaryTQC": TQC,
    "ComplementaryCrossQ": CrossQ,
    "PrioritizedDQN": DQN,
    "PrioritizedQRDQN": QRDQN,
    "PrioritizedSAC": SAC,
    "PrioritizedTD3": TD3,
}
MAX_KNOBS = 10
MAX_LINES = 400


def extra_knobs(name: str) -> list[str]:
    """The keyword parameters of ``name`` beyond its parent's (``inspect.signature``)."""
    ours = inspect.signature(getattr(sb3c, name)).parameters
    parents = inspect.signature(CLASSES[name]).parameters
    return [p for p in ours if p not in parents]


@pytest.mark.parametrize("name", sorted(CLASSES))
def test_at_most_ten_knobs_beyond_the_parent(name: str) -> None:
    knobs = extra_knobs(name)
    assert len(knobs) <= MAX_KNOBS, knobs
    assert set(inspect.signature(CLASSES[name]).parameters) <= set(inspect.signature(getattr(sb3c, name)).parameters)


def test_the_knob_count_can_fail() -> None:
    """The counted knobs of the default class are the ones its docstring lists (the count is not vacuous)."""
    assert extra_knobs("ComplementaryDQN") == [
        "contribution",
        "alpha",
        "epsilon",
        "uniform_fraction",
        "score_floor",
        "candidate_pool",
        "extractor_kwargs",
    ]


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph() -> dict[str, set[str]]:
    """``module -> the package modules it imports``, every import counted (``TYPE_CHECKING`` and local ones too)."""
    modules = {_module_name(path): path for path in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text())):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join(
                        package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else [])
                    )
                targets = [base] + [f"{base}.{alias.name}" for alias in node.names]
            for target in targets:
                if target in modules and target != name and not name.startswith(f"{target}."):
                    graph[name].add(target)
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle of ``graph`` (a path that returns to its start), or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for child in sorted(graph[node]):
            if state.get(child) == 1:
                return [*stack[stack.index(child) :], child]
            if child not in state and (cycle := visit(child)):
                return cycle
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def test_no_import_cycles() -> None:
    assert find_cycle(import_graph()) is None


def test_the_cycle_check_can_fail() -> None:
    graph = import_graph()
    graph["sb3_complementary.common.sum_tree"].add("sb3_complementary.common.buffers")
    assert find_cycle(graph) is not None


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_files_are_at_most_400_lines(path: Path) -> None:
    assert len(path.read_text().splitlines()) <= MAX_LINES


#: The most package files the default path may execute (docs/design.md, "Shape").
MAX_PATH_FILES = 5


def default_path_files(**replay: Any) -> set[str]:
    """
    The package files that run during the default path: ComplementaryDQN at its defaults (or with
    ``replay``), one ``replay_buffer.add()``, one ``train()`` step, one ``fit_extractor()`` and one
    ``refresh_scores()``, traced with ``sys.setprofile`` (construction and a short ``learn`` that
    fills the buffer run before the trace). LaBER, the default, fits nothing in the last two.
    """
    import sys

    import gymnasium as gym
    import numpy as np

    model = sb3c.ComplementaryDQN(
        "MlpPolicy",
        gym.make("CartPole-v1"),
        buffer_size=2000,
        learning_starts=0,
        batch_size=32,
        seed=0,
        device="cpu",
        **replay,
    )
    model.learn(900)  # enough to fit the density ratio's extractor (twice its fast memory of 400)
    obs = model.env.reset()
    files: set[str] = set()
    root = str(PACKAGE) + "/"

    def profile(frame, event, arg):
        if frame.f_code.co_filename.startswith(root):
            files.add(frame.f_code.co_filename[len(root) :])

    sys.setprofile(profile)
    try:
        model.replay_buffer.add(obs, obs, np.array([[0]]), np.array([1.0]), np.array([False]), [{}])
        model.train(gradient_steps=1, batch_size=32)
        model.fit_extractor()
        model.refresh_scores()
    finally:
        sys.setprofile(None)
    fitted = not np.isnan(model.extractor_auc)
    assert fitted == (model.contribution == "density_ratio"), "the trace missed the fit, or LaBER fitted"
    return files


@pytest.mark.parametrize("replay", [{}, {"contribution": "density_ratio"}], ids=["default", "density-ratio"])
def test_the_default_path_reads_in_at_most_five_files(replay: dict[str, Any]) -> None:
    files = default_path_files(**replay)
    assert len(files) <= MAX_PATH_FILES, sorted(files)
    assert "common/replay_buffer.py" in files and "dqn/weighted_dqn.py" in files, sorted(files)  # the trace sees them
