"""
The generated pages (``python -m benchmarks.regenerate``) come back byte for byte from the committed
run files: a harness change that moves a number, a title or a figure of a committed page fails here,
and ``python -m benchmarks.regenerate`` then ``git diff docs`` shows what it moved.

One page of each kind is regenerated into a temporary folder (the fast ones: the whole list takes
half an hour on two cores, and runs with that command); every page of the list is checked to exist,
and the report pages to carry distinct titles from their matrices and to quote their command.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.harness.matrix_yaml import read_title
from benchmarks.regenerate import PAGES, Page, write_page

ROOT = Path(__file__).resolve().parents[1]


def page(output: str) -> Page:
    (found,) = [p for p in PAGES if p.output == output]
    return found


def written_files(out_root: Path) -> list[Path]:
    return sorted(path for path in out_root.rglob("*") if path.is_file())


@pytest.mark.parametrize(
    "output",
    [
        "docs/multitask/per_task.md",  # the multi-task study's per-task tables and plots
        "docs/benchmarks/study-laber/gates.md",  # a study's no-harm gate with its noise floor
        "docs/benchmarks/screen-progress/strength_trace.png",  # a diagnostic's figure
        "docs/benchmarks/pilot-return",  # a pilot's page, summary and figure
        "docs/results/triage.md",  # the triage's rule, verdicts and the age of the draws
    ],
)
def test_page_regenerates_byte_identical(output: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)  # the commands name the run files relative to the checkout
    write_page(page(output), out_root=tmp_path)
    written = written_files(tmp_path)
    assert written, f"{output}: nothing written"
    for path in written:
        committed = ROOT / path.relative_to(tmp_path)
        assert path.read_bytes() == committed.read_bytes(), f"{committed} differs from its regeneration"


@pytest.mark.slow
def test_report_page_regenerates_byte_identical(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The smallest rliable report (30 run files, 2000 bootstrap replications), figures included."""
    monkeypatch.chdir(ROOT)
    write_page(page("docs/multitask"), out_root=tmp_path)
    written = written_files(tmp_path)
    assert tmp_path / "docs/multitask/README.md" in written
    for path in written:
        committed = ROOT / path.relative_to(tmp_path)
        assert path.read_bytes() == committed.read_bytes(), f"{committed} differs from its regeneration"


def test_every_page_exists_and_report_titles_are_distinct() -> None:
    for p in PAGES:
        assert (ROOT / p.output).exists(), p.command
    reports = [p for p in PAGES if p.module == "benchmarks.report"]
    titles = [read_title(ROOT / p.args[p.args.index("--matrix") + 1]) for p in reports]
    assert len(set(titles)) == len(titles), titles
    for p, title in zip(reports, titles, strict=True):
        readme = (ROOT / p.output / "README.md").read_text()
        assert readme.startswith(f"# {title}\n"), p.output
        assert f"\n{p.command}\n" in readme, f"{p.output}: the page must quote the command that regenerates it"
