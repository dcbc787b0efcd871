"""
Executing a plan's pending runs on a backend (:mod:`.backends`): writing each run file as its record
arrives, with the code's provenance, and a progress bar over the env steps.
"""

from __future__ import annotations

import socket
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tqdm import tqdm

from benchmarks.harness.backends import run_in_process, run_local, run_ray
from benchmarks.harness.matrix import RunSpec
from benchmarks.harness.provenance import code_provenance
from benchmarks.harness.store import write_run_file


@dataclass
class Summary:
    """Outcome of one invocation: run ids written done, failed, and lost (no file written)."""

    done: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    lost: list[str] = field(default_factory=list)


def execute_plan(
    pending: Sequence[RunSpec],
    out_dir: str | Path,
    workers: int | None = 1,
    ray_address: str | None = None,
    progress: bool = True,
) -> Summary:
    """
    Execute pending runs and write their files.

    :param pending: Runs, in execution order.
    :param out_dir: The runs folder.
    :param workers: Local processes (``0``: in this process, serially); with Ray, a cap on runs in flight.
    :param ray_address: ``None`` for local processes, else a Ray address or ``"local"``.
    :param progress: Show a tqdm bar over the env steps of the pending runs (ETA included).
    :return: What happened.
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    provenance = {**code_provenance(), "driver_host": socket.gethostname()}
    summary = Summary()
    bar = tqdm(
        total=sum(spec.entry.budget for spec in pending),
        unit="step",
        unit_scale=True,
        desc=f"{len(pending)} runs",
        disable=not progress,
        smoothing=0.05,
    )

    def on_record(spec: RunSpec, record: dict[str, Any]) -> None:
        record["code"] = provenance
        write_run_file(out_dir, record)
        bar.update(spec.entry.budget)
        if record["status"] == "done":
            summary.done.append(spec.run_id)
            timing = record["timing"]
            tqdm.write(
                f"[done]   {spec.run_id}: final return {record['curve']['mean'][-1]:.2f}, "
                f"{timing['train_seconds']:.0f} s, {timing['env_steps_per_second']:.0f} steps/s"
            )
        else:
            summary.failed.append(spec.run_id)
            tqdm.write(f"[FAILED] {spec.run_id}: {record['error']}")
        bar.set_postfix(done=len(summary.done), failed=len(summary.failed), lost=len(summary.lost))

    def on_lost(spec: RunSpec, reason: str) -> None:
        summary.lost.append(spec.run_id)
        bar.update(spec.entry.budget)
        tqdm.write(f"[lost]   {spec.run_id}: {reason} (no file written; the next invocation redoes it)")

    try:
        if ray_address is not None:
            run_ray(pending, ray_address, workers, on_record, on_lost)
        elif workers == 0:
            run_in_process(pending, on_record)
        else:
            run_local(pending, workers or 1, on_record, on_lost)
    finally:
        bar.close()
    return summary
