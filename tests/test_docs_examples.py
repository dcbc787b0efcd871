"""
The docs site's code, as a user would copy it (docs/*.md: Sphinx + MyST, see docs/conf.py), and the README's.

- Every ```python block of a page runs, in page order and in one namespace per page (later blocks
  use what earlier ones built, as a reader pasting them in turn would), in a fresh folder. Training budgets
  are capped so that the page runs in seconds: every off-policy ``learn()`` stops after
  ``learning_starts`` + 300 env steps, and at least 1,000 (past the extractor's first fit and
  re-score at the default ``extractor_train_freq``/``refresh_interval``).
- A block may be skipped only with ``<!-- docs-test: skip (run by tests/FILE.py::TEST) -->`` on the
  line before its fence, naming the test that runs it instead; that test must exist.
- ```yaml blocks must parse. Shell blocks (```bash) are commands that take minutes to hours (full
  trainings, benchmark matrices), so they are checked, not run: every ``python -m`` module imports,
  every script, matrix and config file they name exists, every ``pip install`` extra is declared,
  and every ``sb3-complementary`` command and ``--algo`` is one the CLI knows. The zoo commands
  themselves run in tests/test_zoo_cli.py.
"""

from __future__ import annotations

import importlib.util
import inspect
import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import torch as th
import yaml
from stable_baselines3.common.off_policy_algorithm import OffPolicyAlgorithm

from sb3_complementary.zoo.cli import COMMANDS, OWN_COMMANDS
from sb3_complementary.zoo.registry import ZOO_ALGORITHMS

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
#: Data folders under docs/ (run files, logs, build output): never pages.
NOT_PAGES = ("_build", "runs", "performance-logs")
FENCE = re.compile(r"^```(?P<lang>[\w-]*)[^\n]*\n(?P<code>.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
SKIP = re.compile(r"<!-- docs-test: skip \(run by (?P<file>tests/[\w/]+\.py)::(?P<test>\w+)\) -->")
#: Steps past ``learning_starts`` that a capped ``learn()`` runs, and its floor.
STEPS_PAST_LEARNING_STARTS = 300
MIN_STEPS = 1_000


@dataclass(frozen=True)
class Block:
    page: str
    lang: str
    code: str
    line: int
    skip: re.Match[str] | None


def site_pages() -> list[Path]:
    """The site's pages, and the README (the front door a user copies the quickstart from)."""
    pages = sorted(
        path
        for path in DOCS.rglob("*.md")
        if not any(part in NOT_PAGES or part.startswith("runs-") for part in path.relative_to(DOCS).parts)
    )
    return [*pages, ROOT / "README.md"]


def blocks(path: Path) -> list[Block]:
    text = path.read_text()
    found = []
    for match in FENCE.finditer(text):
        line = text.count("\n", 0, match.start()) + 1
        before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        page = path.relative_to(ROOT).as_posix()
        found.append(Block(page, match["lang"], match["code"], line, SKIP.search(before)))
    return found


ALL_BLOCKS = [block for page in site_pages() for block in blocks(page)]
PYTHON_PAGES = sorted({b.page for b in ALL_BLOCKS if b.lang == "python"})
SHELL_PAGES = sorted({b.page for b in ALL_BLOCKS if b.lang in ("bash", "sh", "console")})


def test_the_examples_are_found():
    """Guard for the extraction: a change to the fences or the page list must not silently test nothing."""
    pages = {"quickstart.md", "algorithms/dqn.md", "replay_buffers.md", "tensorboard.md", "multitask.md"}
    assert {f"docs/{page}" for page in pages} | {"README.md"} <= set(PYTHON_PAGES)
    assert sum(b.lang == "python" for b in ALL_BLOCKS) >= 15
    assert {"docs/zoo.md", "README.md"} <= set(SHELL_PAGES)


@pytest.fixture
def capped_learn(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int]]:
    """Cap every off-policy ``learn()``; returns (class name, capped budget) per call."""
    calls: list[tuple[str, int]] = []
    original = OffPolicyAlgorithm._setup_learn

    def setup_learn(self: OffPolicyAlgorithm, total_timesteps: int, *args: Any, **kwargs: Any) -> Any:
        budget = min(total_timesteps, max(self.learning_starts + STEPS_PAST_LEARNING_STARTS, MIN_STEPS))
        calls.append((type(self).__name__, budget))
        return original(self, budget, *args, **kwargs)

    monkeypatch.setattr(OffPolicyAlgorithm, "_setup_learn", setup_learn)
    return calls


@pytest.mark.usefixtures("scratch_registry")  # a page may register a task family, as a user would
@pytest.mark.parametrize("page", PYTHON_PAGES)
def test_python_examples_run(page: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capped_learn) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    threads = th.get_num_threads()
    th.set_num_threads(1)
    namespace: dict[str, Any] = {"__name__": "__docs_example__"}
    ran = 0
    try:
        for block in (b for b in ALL_BLOCKS if b.page == page and b.lang == "python"):
            if block.skip:
                continue
            exec(compile(block.code, f"{page}:{block.line}", "exec"), namespace)
            ran += 1
    finally:
        th.set_num_threads(threads)
    assert ran or all(b.skip for b in ALL_BLOCKS if b.page == page and b.lang == "python")
    if ".learn(" in "".join(b.code for b in ALL_BLOCKS if b.page == page and not b.skip):
        assert capped_learn, "learn() ran without the cap: the docs test would train for the full budget"


def test_skipped_blocks_name_a_test_that_exists():
    skipped = [b for b in ALL_BLOCKS if b.skip]
    for block in skipped:
        source = ROOT / block.skip["file"]
        assert source.is_file(), f"{block.page}:{block.line} names a missing file {source}"
        assert f"def {block.skip['test']}(" in source.read_text(), f"{block.page}:{block.line}: no such test"


@pytest.mark.parametrize("block", [b for b in ALL_BLOCKS if b.lang == "yaml"], ids=lambda b: f"{b.page}:{b.line}")
def test_yaml_examples_parse(block: Block) -> None:
    assert isinstance(yaml.safe_load(block.code), dict)


def shell_commands(code: str) -> list[list[str]]:
    """The commands of a shell block: continuation lines joined, comments dropped, split at && and ;."""
    joined = re.sub(r"\\\n\s*", " ", code)
    commands = []
    for line in joined.splitlines():
        line = re.sub(r"(^|\s)#.*$", "", line).strip()
        lexer = shlex.shlex(line, posix=True, punctuation_chars=";&")  # a quoted ';' is an argument's
        lexer.whitespace_split = True
        command: list[str] = []
        for token in [*lexer, ";"]:
            if token in (";", "&&"):
                if command:
                    commands.append(command)
                command = []
            else:
                command.append(token)
    return commands


def declared_extras() -> set[str]:
    """The extras of pyproject.toml (read from the file: an editable install's metadata can be stale)."""
    text = (ROOT / "pyproject.toml").read_text()
    section = text.split("[project.optional-dependencies]", 1)[1].split("\n[", 1)[0]
    return set(re.findall(r"^([\w-]+) = \[", section, re.MULTILINE))


REPO_FILE = re.compile(r"^(sb3_complementary|docs|examples|benchmarks|tests)/[\w./-]+\.(py|ya?ml|sh)$")


def problems_of(command: list[str]) -> list[str]:
    found = []
    if command[:2] == ["python", "-m"] and importlib.util.find_spec(command[2]) is None:
        found.append(f"no module {command[2]}")
    if command[0] == "pip" and "install" in command:
        for token in command:
            for extras in re.findall(r"\[([\w,-]+)\]", token):
                found += [f"no extra {e!r}" for e in extras.split(",") if e not in declared_extras()]
    if command[0] == "sb3-complementary":
        if command[1] not in {*COMMANDS, *OWN_COMMANDS}:
            found.append(f"no command {command[1]!r}")
        if "--algo" in command:
            algo = command[command.index("--algo") + 1]
            if algo not in {entry.name for entry in ZOO_ALGORITHMS}:
                found.append(f"no --algo {algo!r}")
    for token in command:
        if REPO_FILE.match(token) and not (ROOT / token).is_file():
            found.append(f"no file {token}")
    return found


def test_shell_check_catches_stale_commands():
    """The checker itself: each of these is stale, and says why."""
    assert problems_of(["python", "-m", "sb3_complementary.no_such_module"])
    assert problems_of(["pip", "install", "-e", ".[no_such_extra]"])
    assert problems_of(["sb3-complementary", "trian", "--algo", "complementary_dqn"])
    assert problems_of(["sb3-complementary", "train", "--algo", "complementary_dnq"])
    assert problems_of(["python", "benchmarks/diagnostics/no_such_script.py"])
    matrix = "benchmarks/matrices/sac.yml"
    assert not problems_of(["python", "-m", "benchmarks.run", "--matrix", matrix])
    # The harness left the package (issue 44): a command naming its old matrices is stale.
    assert problems_of(["python", "-m", "benchmarks.run", "--matrix", "sb3_complementary/benchmark/matrices/sac.yml"])


@pytest.mark.parametrize("page", SHELL_PAGES)
def test_shell_examples_name_what_exists(page: str) -> None:
    found = [
        f"{page}:{block.line}: {' '.join(command)}: {problem}"
        for block in ALL_BLOCKS
        if block.page == page and block.lang in ("bash", "sh", "console")
        for command in shell_commands(block.code)
        for problem in problems_of(command)
    ]
    assert not found, "\n".join(found)


def logged_metrics() -> set[str]:
    """Every ``complementary/...`` key the package logs, with ``{k}`` for a per-task or per-quartile index."""
    from sb3_complementary.common.weighted_algorithm import WeightedAlgorithm

    keys: set[str] = set()
    for source in (ROOT / "sb3_complementary").rglob("*.py"):
        for key in re.findall(r"logger\.record\(\s*f?\"complementary/([^\"]+)\"", source.read_text()):
            if key == "{name}":  # refresh_scores logs replay_diagnostics() item by item
                keys |= set(re.findall(r"\"(\w+)\":", inspect.getsource(WeightedAlgorithm.replay_diagnostics)))
            else:
                keys.add(re.sub(r"\{[^}]*\}", "{k}", key))
    return keys


def test_the_tensorboard_page_explains_every_logged_metric():
    logged = logged_metrics()
    assert {"ess_fraction", "roc_auc", "extractor_loss", "score_age_q{k}", "task_{k}_sample_share"} <= logged
    page = (DOCS / "tensorboard.md").read_text()
    documented = {key.replace("{k}", "1") if key.startswith("score_age") else key for key in logged}
    missing = sorted(key for key in documented if f"complementary/{key}" not in page and f"`{key}`" not in page)
    assert not missing, f"docs/tensorboard.md does not explain: {missing}"
