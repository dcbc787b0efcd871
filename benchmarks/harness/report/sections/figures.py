"""
The figures section of the report page: every PNG, linked relative to the page.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from benchmarks.harness.report.markdown import join_blocks


def figures_section(figures: Sequence[Path], out_dir: Path) -> str:
    """Every figure, linked relative to the page."""
    return join_blocks("## Figures", *(f"![{path.stem}]({_relative(path, out_dir)})" for path in figures))


def _relative(path: Path, base: Path) -> str:
    """:return: ``path`` relative to ``base`` when it is inside it, else as given."""
    try:
        return str(path.resolve().relative_to(base.resolve()))
    except ValueError:
        return str(path)
