"""
Where the runs execute: in this process (debugging), in local processes, or as Ray tasks.

Each run executes in its own process (``--workers N`` local processes, spawn context, one run
per process), or as a Ray task (``--ray-address``; Ray is the optional ``[distributed]`` extra).
The worker returns the record and the *driver* writes the run file, so Ray workers need no
shared filesystem; the library's package and the harness (``benchmarks/``) are shipped to them with
the task (``runtime_env`` ``py_modules``), the other dependencies must be installed on the cluster.

Every backend reports each run through two callbacks: ``on_record(spec, record)`` when the worker
returned its record, ``on_lost(spec, reason)`` when it did not (no file is written, so the next
invocation redoes the run).
"""

from __future__ import annotations

import concurrent.futures as cf
import multiprocessing
import os
import sys
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from benchmarks.harness.matrix import RunSpec
from benchmarks.harness.provenance import HARNESS_DIR, PACKAGE_DIR

#: ``on_record(spec, record)``: a worker returned the record of a run.
OnRecord = Callable[[RunSpec, dict[str, Any]], None]
#: ``on_lost(spec, reason)``: a run ended without a record (no file is written).
OnLost = Callable[[RunSpec, str], None]


def run_in_process(specs: Sequence[RunSpec], on_record: OnRecord) -> None:
    """Serial, in this process (``--workers 0``): for debugging only, no process isolation."""
    from benchmarks.harness.run import execute_run

    for spec in specs:
        on_record(spec, execute_run(spec))


def run_local(specs: Sequence[RunSpec], workers: int, on_record: OnRecord, on_lost: OnLost) -> None:
    """
    ``workers`` local processes (spawn), one fresh process per run where Python allows it.

    At most ``workers`` runs are in flight, so the runs start in the given (seed-major) order.
    A worker that dies without returning (killed, segfault, out of memory) breaks the pool: the
    runs in flight are reported lost (no file, so the next invocation redoes them) and a new
    pool continues with the runs not yet started.
    """
    from benchmarks.harness.run import execute_run

    context = multiprocessing.get_context("spawn")
    extra: dict[str, Any] = {"max_tasks_per_child": 1} if sys.version_info >= (3, 11) else {}

    def new_pool() -> cf.ProcessPoolExecutor:
        return cf.ProcessPoolExecutor(max_workers=workers, mp_context=context, **extra)

    queue = deque(specs)
    in_flight: dict[cf.Future[dict[str, Any]], RunSpec] = {}
    executor = new_pool()
    try:
        while queue or in_flight:
            while queue and len(in_flight) < workers:
                spec = queue.popleft()
                in_flight[executor.submit(execute_run, spec)] = spec
            done, _ = cf.wait(in_flight, return_when=cf.FIRST_COMPLETED)
            broken = False
            while done:
                for future in done:
                    spec = in_flight.pop(future)
                    try:
                        record = future.result()
                    except BrokenProcessPool as exc:
                        broken = True
                        on_lost(spec, f"worker process died: {exc}")
                        continue
                    except Exception as exc:  # e.g. the spec could not be pickled
                        on_lost(spec, f"{type(exc).__name__}: {exc}")
                        continue
                    on_record(spec, record)
                # A broken pool fails every run in flight at once; collect them all, keep the queue.
                done = cf.wait(in_flight)[0] if broken else set()
            if broken:
                executor.shutdown(wait=True)
                executor = new_pool()
    except KeyboardInterrupt:
        executor.shutdown(wait=False, cancel_futures=True)
        raise
    executor.shutdown(wait=True)


def import_ray() -> Any:
    try:
        import ray
    except ImportError as exc:
        raise RuntimeError(
            "--ray-address needs Ray, which is not installed: pip install 'sb3-complementary[distributed]' "
            "(or pip install 'ray[default]')"
        ) from exc
    return ray


def run_ray(specs: Sequence[RunSpec], address: str, workers: int | None, on_record: OnRecord, on_lost: OnLost) -> None:
    """
    Ray tasks (one CPU each). ``address``: ``"local"`` starts a local instance (``workers``
    CPUs, default all), anything else is passed to ``ray.init`` (``"auto"``, ``"ray://host:port"``).
    ``workers``, when given, caps the number of runs in flight (submitted in seed-major order).
    """
    ray = import_ray()
    from benchmarks.harness.run import execute_run

    runtime_env = {
        "py_modules": [str(PACKAGE_DIR), str(HARNESS_DIR)],
        "env_vars": {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"},
    }
    init_kwargs: dict[str, Any] = {"runtime_env": runtime_env, "log_to_driver": False}
    if address == "local":
        init_kwargs.update(num_cpus=workers or os.cpu_count() or 1, include_dashboard=False)
    else:
        init_kwargs["address"] = address
    ray.init(**init_kwargs)
    try:
        remote_run = ray.remote(num_cpus=1, max_retries=0)(execute_run)
        limit = workers if workers else len(specs)
        queue = list(specs)
        in_flight: dict[Any, RunSpec] = {}
        while queue or in_flight:
            while queue and len(in_flight) < limit:
                spec = queue.pop(0)
                in_flight[remote_run.remote(spec)] = spec
            ready, _ = ray.wait(list(in_flight), num_returns=1)
            for ref in ready:
                spec = in_flight.pop(ref)
                try:
                    record = ray.get(ref)
                except Exception as exc:  # worker crashed, node lost: no file, redone next time
                    on_lost(spec, f"{type(exc).__name__}: {exc}")
                    continue
                on_record(spec, record)
    finally:
        ray.shutdown()
