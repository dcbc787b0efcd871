"""
One JSON file per run, and the resume logic built on it.

A run file is written once, when the run ends, through a temporary file in the same folder
and ``os.replace`` (atomic on POSIX), so a reader sees either no file or a whole one. The
states a run can be in:

- ``missing``: no file (never run, or killed before it finished): run it;
- ``corrupt``: a file that is not valid JSON or lacks required fields (half-written by
  something else, truncated on copy): run it again, overwriting the file;
- ``done``: finished: never run again;
- ``failed``: the run raised; the file holds the traceback. It is not retried unless asked
  (``--retry-failed``), so a deterministic crash is reported instead of looping.

A file written by another format version is an error naming the file, never silently redone:
it may hold results someone wants to keep.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from sb3_complementary.common.persistence import atomic_write

#: Version of the run file format written by this module.
FORMAT_VERSION = 1

#: Suffix of run files; ``random_scores.json`` and temp files do not match :data:`RUN_GLOB`.
RUN_GLOB = "*__*__s*.json"

RunState = Literal["missing", "corrupt", "done", "failed"]

_REQUIRED = ("format_version", "run_id", "status", "contender", "env", "seed")
_REQUIRED_DONE = ("curve", "timing")


class RunFileVersionError(ValueError):
    """A run file written by another format version of the harness."""


def run_path(out_dir: str | Path, run_id: str) -> Path:
    """
    :param out_dir: The runs folder.
    :param run_id: ``RunSpec.run_id``.
    :return: Path of that run's file.
    """
    return Path(out_dir) / f"{run_id}.json"


def atomic_write_json(path: str | Path, payload: Mapping[str, Any]) -> None:
    """
    Write JSON so that readers never see a partial file (:func:`~sb3_complementary.common.persistence.atomic_write`).

    :param path: Destination.
    :param payload: JSON-serialisable mapping (numpy scalars and arrays are converted).
    """
    text = json.dumps(payload, indent=1, default=_json_default) + "\n"
    atomic_write(path, lambda file: file.write(text.encode()))


def _json_default(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    return repr(value)


def _validate(data: Any, path: Path) -> dict[str, Any] | None:
    """:return: The record if it is whole, ``None`` if it is corrupt. Raises on a foreign version."""
    if not isinstance(data, dict):
        return None
    version = data.get("format_version")
    if version is not None and version != FORMAT_VERSION:
        raise RunFileVersionError(
            f"{path}: run file of format version {version!r}, this harness reads version {FORMAT_VERSION}; "
            "move it away (or re-run it with the harness that wrote it)"
        )
    if any(key not in data for key in _REQUIRED):
        return None
    if data["status"] not in ("done", "failed"):
        return None
    if data["status"] == "done" and any(key not in data for key in _REQUIRED_DONE):
        return None
    return data


def read_run_file(path: str | Path) -> tuple[RunState, dict[str, Any] | None]:
    """
    Read one run file and classify it.

    :param path: The file.
    :return: ``(state, record)``; ``record`` is ``None`` unless the state is ``done`` or ``failed``.
    :raises RunFileVersionError: if the file was written by another format version.
    """
    path = Path(path)
    try:
        text = path.read_text()
    except FileNotFoundError:
        return "missing", None
    except OSError:
        return "corrupt", None
    try:
        data = json.loads(text)
    except ValueError:
        return "corrupt", None
    record = _validate(data, path)
    if record is None:
        return "corrupt", None
    return record["status"], record


def run_state(out_dir: str | Path, run_id: str) -> RunState:
    """
    :param out_dir: The runs folder.
    :param run_id: ``RunSpec.run_id``.
    :return: The run's resume state.
    :raises RunFileVersionError: if its file was written by another format version.
    """
    return read_run_file(run_path(out_dir, run_id))[0]


def needs_run(state: RunState, retry_failed: bool = False) -> bool:
    """
    :param state: A run's state.
    :param retry_failed: Whether failed runs are run again.
    :return: Whether the runner must (re)run it.
    """
    return state in ("missing", "corrupt") or (retry_failed and state == "failed")


def write_run_file(out_dir: str | Path, record: Mapping[str, Any]) -> Path:
    """
    Write a finished run's record (status ``done`` or ``failed``).

    :param out_dir: The runs folder.
    :param record: The record, as produced by :func:`~.run.execute_run`.
    :return: The path written.
    """
    if record.get("status") not in ("done", "failed"):
        raise ValueError(f"refusing to write a run record with status {record.get('status')!r}")
    payload = dict(record)
    payload["format_version"] = FORMAT_VERSION
    path = run_path(out_dir, str(record["run_id"]))
    atomic_write_json(path, payload)
    return path


@dataclass(frozen=True)
class RunRecord:
    """
    Typed view of a run file, for the report.

    :param path: The file.
    :param data: The whole JSON record.
    """

    path: Path
    data: dict[str, Any]

    @property
    def run_id(self) -> str:
        """:return: ``"<contender>__<entry>__s<seed>"``."""
        return str(self.data["run_id"])

    @property
    def status(self) -> str:
        """:return: ``"done"`` or ``"failed"``."""
        return str(self.data["status"])

    @property
    def contender(self) -> str:
        """:return: Contender name."""
        return str(self.data["contender"]["name"])

    @property
    def env(self) -> str:
        """:return: Suite entry name."""
        return str(self.data["env"]["name"])

    @property
    def seed(self) -> int:
        """:return: Seed."""
        return int(self.data["seed"])

    @property
    def budget(self) -> int:
        """:return: Step budget."""
        return int(self.data["env"]["budget"])

    @property
    def r_ref(self) -> float:
        """:return: Reference score used for this entry."""
        return float(self.data["env"]["r_ref"])

    @property
    def r_ref_source(self) -> str:
        """:return: Where R_ref comes from."""
        return str(self.data["env"].get("r_ref_source", ""))

    @property
    def timesteps(self) -> np.ndarray:
        """:return: Env steps of the eval points, shape ``(n_evals,)``."""
        return np.asarray(self.data["curve"]["timesteps"], dtype=np.int64)

    @property
    def mean_returns(self) -> np.ndarray:
        """:return: Mean eval return at each eval point, shape ``(n_evals,)``."""
        return np.asarray(self.data["curve"]["mean"], dtype=np.float64)

    @property
    def ess_fractions(self) -> np.ndarray | None:
        """
        :return: ESS fraction of the replay's sampling distribution at each eval point, shape
            ``(n_evals,)`` (1 = uniform replay); None for uniform contenders and for runs recorded
            before the runner measured it.
        """
        values = self.data["curve"].get("ess_fraction")
        return None if values is None else np.asarray(values, dtype=np.float64)

    @property
    def train_seconds(self) -> float:
        """:return: Wall-clock seconds of training, evaluations excluded (see ``timing.what``)."""
        return float(self.data["timing"]["train_seconds"])

    @property
    def error(self) -> str:
        """:return: The exception line of a failed run (empty if done)."""
        return str(self.data.get("error") or "")

    @property
    def traceback(self) -> str:
        """:return: The traceback of a failed run (empty if done)."""
        return str(self.data.get("traceback") or "")


def scan_runs(runs_dir: str | Path) -> tuple[list[RunRecord], list[Path]]:
    """
    Read every run file of a folder.

    :param runs_dir: The runs folder.
    :return: ``(records, corrupt_paths)``: whole records (done or failed), and the files that
        could not be read (they will be redone by the runner; the report lists them).
    :raises RunFileVersionError: if a file was written by another format version.
    """
    records: list[RunRecord] = []
    corrupt: list[Path] = []
    for path in sorted(Path(runs_dir).glob(RUN_GLOB)):
        _, data = read_run_file(path)
        if data is None:
            corrupt.append(path)
        else:
            records.append(RunRecord(path=path, data=data))
    return records, corrupt
