"""
Markdown helpers of the report page: blocks joined by a blank line, and tables whose cells cannot break them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def join_blocks(*blocks: str) -> str:
    """:return: The non-empty blocks, separated by a blank line (an optional block is passed as "")."""
    return "\n\n".join(block for block in blocks if block)


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """:return: A Markdown table; ``|`` and newlines in cells are escaped so that they cannot break it."""

    def cell(value: Any) -> str:
        return str(value).replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(map(cell, header)) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(map(cell, row)) + " |" for row in rows]
    return "\n".join(lines)
