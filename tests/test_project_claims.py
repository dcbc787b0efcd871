"""The project's own text: it cites only its own files, and its quoted figures are the measured ones."""

import inspect
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import sb3_complementary

ROOT = Path(__file__).parents[1]
#: Files outside the repository that older docs used to cite.
FOREIGN = re.compile(r"shared/(DESIGN|BENCHMARK|LAYOUT)|DESIGN\.md|BENCHMARK\.md|DESIGN §")


def tracked_text_files() -> list[Path]:
    listed = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    suffixes = {".py", ".md", ".yml", ".yaml", ".toml", ".sh", ""}
    paths = [ROOT / line for line in listed.splitlines() if "/runs" not in line]
    return [p for p in paths if p.suffix in suffixes and p.is_file()]


def test_the_project_cites_no_file_outside_the_repository():
    offenders = [
        f"{path.relative_to(ROOT)}:{n}"
        for path in tracked_text_files()
        for n, line in enumerate(path.read_text(errors="ignore").splitlines(), 1)
        if FOREIGN.search(line) and path.name != "test_project_claims.py"
    ]
    assert not offenders, f"citations of files outside the repository: {offenders}"


def test_performance_page_quotes_the_rescore_figure_that_performance_json_holds():
    log = ROOT / "docs" / "performance-logs" / "performance.json"
    measured = json.loads(log.read_text())["rescore"]["median_seconds"]
    assert f"{measured:.2f} s" in (ROOT / "docs" / "performance.md").read_text()


def test_algorithm_docstrings_say_what_the_default_does():
    for name in sb3_complementary.__all__:
        obj = getattr(sb3_complementary, name)
        if isinstance(obj, type) and name.startswith("Complementary") and hasattr(obj, "learn"):
            doc = obj.__doc__ or ""
            assert "demonstrably" not in doc, f"{name} claims more than its default does"
            if inspect.signature(obj).parameters["alpha"].default == 0:  # the actor-critic classes: uniform draws
                says_default = "``alpha=0``" in doc and "uniform" in doc and "bit for bit" in doc
            else:
                says_default = 'contribution="laber"' in doc and "|TD|" in doc and "LaBER" in doc
            assert says_default, f"{name} does not say what its default learns"


def test_synthetic_report_runs_do_not_depend_on_the_hash_seed():
    """tests/test_benchmark_report.py's synthetic curves must be the same in every process."""
    code = (
        "from tests.test_benchmark_report import synthetic_record; "
        "print(synthetic_record('dqn', 'CartPole-v1', 1)['curve']['mean'])"
    )
    outputs = {
        subprocess.run(
            [sys.executable, "-c", code],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONHASHSEED": seed},
        ).stdout
        for seed in ("1", "2")
    }
    assert len(outputs) == 1
