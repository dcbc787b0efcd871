"""
The wheel is the library (issue 44): it holds the algorithms, buffers, extractor, export, the zoo CLI
with its hyperparameter files and the multi-task envs, and none of the experiment harness
(``benchmarks/``: runner, report, matrices, the multi-task study's tables, diagnostics).

The wheel is built from a copy of what the build reads (``pyproject.toml``, ``README.md``, the
package) plus ``benchmarks/``, so that leaving the harness out is the packaging config's doing, and
no ``build/`` folder of the checkout (which may hold an older layout) leaks into it.

The check can fail: on the layout before the move (commit 3a298f1, harness in
``sb3_complementary/benchmark/``, matrices packaged, ``sb3_complementary/multitask/study.py``),
:func:`harness_files` names 50 files of that wheel (the harness's 34 modules, its 15 matrices and
``study.py``).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: What a user imports or runs: each must be in the wheel.
PUBLIC_FILES = (
    "sb3_complementary/__init__.py",
    "sb3_complementary/py.typed",
    "sb3_complementary/dqn/__init__.py",
    "sb3_complementary/sac/__init__.py",
    "sb3_complementary/common/__init__.py",
    "sb3_complementary/multitask/__init__.py",
    "sb3_complementary/multitask/evaluate.py",
    "sb3_complementary/multitask/multitask_env.py",
    "sb3_complementary/zoo/cli.py",
    "sb3_complementary/zoo/hyperparams/complementary_dqn.yml",
)


def harness_files(names: list[str]) -> list[str]:
    """
    :param names: The wheel's file names.
    :return: Those that belong to the harness: a ``benchmark``/``benchmarks`` package or folder, a
        ``study`` module, a matrices YAML.
    """
    found = []
    for name in names:
        parts = name.split("/")
        folders, stem = parts[:-1], parts[-1].rsplit(".", 1)[0]
        if (
            any(part in ("benchmark", "benchmarks", "matrices", "diagnostics") for part in folders)
            or stem in ("study", "multitask_study", "regenerate")
            or (name.endswith((".yml", ".yaml")) and "/zoo/hyperparams/" not in name)
        ):
            found.append(name)
    return found


def build_wheel(tmp_path: Path) -> list[str]:
    """:return: The file names of the wheel built from a copy of the checkout's sources."""
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, src / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "gpu-results")
    for folder in ("sb3_complementary", "benchmarks"):
        shutil.copytree(ROOT / folder, src / folder, ignore=ignore)
    dist = tmp_path / "dist"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(src), "--no-deps", "--no-build-isolation", "-q", "-w", str(dist)],
        check=True,
        cwd=src,
        capture_output=True,
        timeout=120,
    )
    (wheel,) = dist.glob("sb3_complementary-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        return archive.namelist()


@pytest.fixture(scope="module")
def wheel_files(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    # setuptools builds wheels itself since 70.1; with no build isolation, the build uses this environment's.
    pytest.importorskip("setuptools", minversion="77")
    return build_wheel(tmp_path_factory.mktemp("wheel"))


def test_wheel_has_no_harness(wheel_files: list[str]) -> None:
    assert harness_files(wheel_files) == []
    top_level = {name.split("/")[0] for name in wheel_files if not name.startswith("sb3_complementary-")}
    assert top_level == {"sb3_complementary"}


def test_wheel_has_the_library(wheel_files: list[str]) -> None:
    missing = [name for name in PUBLIC_FILES if name not in wheel_files]
    assert missing == []
    hyperparams = [name for name in wheel_files if name.startswith("sb3_complementary/zoo/hyperparams/")]
    assert len(hyperparams) == len(list((ROOT / "sb3_complementary/zoo/hyperparams").glob("*.yml")))


def test_harness_files_flags_the_old_layout() -> None:
    """The names the old wheel held (3a298f1) are flagged; the library's own are not."""
    old = [
        "sb3_complementary/benchmark/runner.py",
        "sb3_complementary/benchmark/matrices/screen.yml",
        "sb3_complementary/multitask/study.py",
    ]
    assert harness_files(old + list(PUBLIC_FILES)) == old
