"""
Provenance of the code that runs the benchmark: the package folder, its git commit and dirtiness, and a
content hash of its ``.py`` files. The driver stores it in every run file (``"code"``).
"""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path
from typing import Any

#: The ``sb3_complementary`` folder: hashed here, and shipped to Ray workers by :mod:`.backends`.
PACKAGE_DIR = Path(__file__).resolve().parents[1]


def code_provenance() -> dict[str, Any]:
    """
    Which code the driver ran: git commit and dirtiness of the checkout holding the package,
    and a content hash of the package's ``.py`` files (meaningful even for a dirty checkout).

    :return: JSON-safe mapping; git fields are ``None`` outside a git checkout.
    """
    digest = hashlib.sha256()
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        digest.update(str(path.relative_to(PACKAGE_DIR)).encode())
        digest.update(path.read_bytes())
    info: dict[str, Any] = {"package_sha256": digest.hexdigest()[:16], "git_commit": None, "git_dirty": None}
    try:
        root = PACKAGE_DIR.parent
        commit = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=10, check=True
        ).stdout.strip()
        status = subprocess.run(
            ["git", "status", "--porcelain", "--", str(PACKAGE_DIR)],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout
        info.update(git_commit=commit, git_dirty=bool(status.strip()))
    except (OSError, subprocess.SubprocessError):
        pass
    return info
