"""
The package's shape (docs/design.md, "Shape"): few knobs, constructors that show their parent's
parameters, at most 3 of the package's classes in any public class's MRO, no import cycles, and no
history (commit hashes) in the code.
"""

import ast
import inspect
import re
from pathlib import Path

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
#: The most classes of this package in the MRO of a public class (SB3's shape: one base per role).
MAX_OWN_CLASSES = 3


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


def own_classes(cls: type) -> list[str]:
    """The classes of this package in ``cls``'s MRO, ``cls`` included."""
    return [klass.__name__ for klass in cls.__mro__ if klass.__module__.startswith("sb3_complementary")]


@pytest.mark.parametrize("name", [n for n in sb3c.__all__ if isinstance(getattr(sb3c, n), type)])
def test_at_most_three_of_the_packages_classes_in_a_public_mro(name: str) -> None:
    assert len(own_classes(getattr(sb3c, name))) <= MAX_OWN_CLASSES, own_classes(getattr(sb3c, name))


def test_the_mro_count_can_fail() -> None:
    """A mixin stacked on the default class would be counted (the count is not vacuous)."""

    class ExtraMixin:
        pass

    ExtraMixin.__module__ = "sb3_complementary.common.extra"
    stacked = type("Stacked", (ExtraMixin, sb3c.ComplementaryDQN), {"__module__": "sb3_complementary.dqn.stacked"})
    assert own_classes(stacked) == ["Stacked", "ExtraMixin", "ComplementaryDQN", "WeightedDQN", "WeightedAlgorithm"]


@pytest.mark.parametrize("name", sorted(CLASSES))
def test_the_constructor_is_written_out(name: str) -> None:
    """``inspect.signature`` shows the parent's parameters: the constructor lists them (no synthesised signature)."""
    cls = getattr(sb3c, name)
    assert "__signature__" not in vars(cls)
    written = list(inspect.signature(cls.__init__).parameters)[1:]
    parents = list(inspect.signature(CLASSES[name]).parameters)
    assert written[: len(parents)] == parents


#: A hexadecimal word of 7 to 40 characters with a digit and a letter: a commit hash.
COMMIT_HASH = re.compile(r"\b(?=[0-9a-f]*[0-9])(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}\b")


def commit_hashes(text: str) -> list[str]:
    return COMMIT_HASH.findall(text)


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_line_of_the_package_names_a_commit(path: Path) -> None:
    """History belongs in the changelog and the results pages, not in the code."""
    assert commit_hashes(path.read_text()) == []


def test_the_commit_check_can_fail() -> None:
    assert commit_hashes("removed after commit 8cac570 (see a07913f)") == ["8cac570", "a07913f"]
    assert commit_hashes("1e-6, 0x10, 1000000, deadbeef, float64") == []
