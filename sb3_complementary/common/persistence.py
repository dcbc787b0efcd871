"""Files that are never half-written, and save files checked before loading."""

import io
import os
import pathlib
import tempfile
import zipfile
from collections.abc import Callable


def atomic_write(path: str | pathlib.Path, write: Callable[[io.BufferedWriter], object]) -> None:
    """
    Write through ``write(file)`` into a temporary file, then rename it onto ``path``.

    A crash or an exception mid-write leaves the previous file (if any) untouched, never a
    half-written one.

    :param path: Destination.
    :param write: Callable that writes the content into the open binary file it is given.
    """
    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; a plain open() (as SB3's save) honours the umask
    try:
        with open(tmp, "wb") as file:
            write(file)
            file.flush()
            os.fsync(file.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise


def check_save_file(path: str | pathlib.Path) -> pathlib.Path | None:
    """
    Raise a ``ValueError`` naming ``path`` unless it is a readable SB3 save file (a zip archive
    whose members pass their CRC check, with the ``data`` member SB3 writes). SB3 appends
    ``.zip`` to a path without a suffix, and so does this check.

    :return: The file checked, or None where there is none (SB3 raises its own ``FileNotFoundError``).
    """
    target = pathlib.Path(path)
    if not target.exists() and target.suffix == "":
        target = target.with_name(f"{target.name}.zip")
    if not target.exists():
        return None
    try:
        with zipfile.ZipFile(target) as archive:
            bad = archive.testzip()
            names = archive.namelist()
    except (zipfile.BadZipFile, EOFError, OSError) as exc:
        raise ValueError(f"{target} is not a readable SB3 save file: truncated or corrupted ({exc})") from exc
    if bad is not None:
        raise ValueError(f"{target} is corrupted: its member {bad!r} fails its CRC check")
    if "data" not in names:
        raise ValueError(f"{target} is not an SB3 save file: it has no 'data' member (members: {names})")
    return target


def _umask() -> int:
    """The process umask (reading it means setting it: put it straight back)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
