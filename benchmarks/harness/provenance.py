"""
Provenance of the code that runs the benchmark: the library's package folder and the lab's
``benchmarks/`` folder, the git commit and dirtiness of the checkout, and a content hash of each
folder's ``.py`` files. The driver stores it in every run file (``"code"``).
"""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path
from typing import Any

import sb3_complementary

#: The ``sb3_complementary`` folder (the library the runs measure): hashed here, and shipped to Ray
#: workers by :mod:`.backends`.
PACKAGE_DIR = Path(sb3_complementary.__file__).resolve().parent

#: The ``benchmarks`` folder (this harness: how a run is trained, evaluated and recorded): hashed
#: apart from the library, and shipped to Ray workers with it.
HARNESS_DIR = Path(__file__).resolve().parents[1]


def _content_hash(folder: Path) -> str:
    """:return: The first 16 hex digits of the SHA-256 of ``folder``'s ``.py`` files, paths included."""
    digest = hashlib.sha256()
    for path in sorted(folder.rglob("*.py")):
        digest.update(str(path.relative_to(folder)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def code_provenance() -> dict[str, Any]:
    """
    Which code the driver ran: git commit and dirtiness of the checkout holding the harness (the
    library's folder and the harness's), and content hashes of the library's ``.py`` files
    (``package_sha256``) and of the harness's (``harness_sha256``), meaningful even for a dirty
    checkout.

    :return: JSON-safe mapping; git fields are ``None`` outside a git checkout.
    """
    info: dict[str, Any] = {
        "package_sha256": _content_hash(PACKAGE_DIR),
        "harness_sha256": _content_hash(HARNESS_DIR),
        "git_commit": None,
        "git_dirty": None,
    }
    try:
        root = HARNESS_DIR.parent
        commit = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=10, check=True
        ).stdout.strip()
        status = subprocess.run(
            ["git", "status", "--porcelain", "--", str(PACKAGE_DIR), str(HARNESS_DIR)],
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
