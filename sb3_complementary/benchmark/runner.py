"""
Command line of the benchmark: run the pending runs of a matrix.

::

    python -m sb3_complementary.benchmark [--matrix PATH] [--out DIR] [--workers N]
        [--ray-address auto|ray://HOST:PORT|local] [--only-contenders a,b] [--only-envs x,y]
        [--seeds 0-4] [--retry-failed] [--dry-run]

Runs whose file is missing or corrupt are pending; finished ones (done or failed) are skipped,
so the runner can be stopped and started again at will and the matrix fills up over many
invocations. Pending runs are ordered seed-major (seed 0 of every contender and entry, then
seed 1, ...) so that a partial matrix stays balanced.

Each run executes in its own process (``--workers N`` local processes, spawn context, one run
per process), or as a Ray task (``--ray-address``; Ray is the optional ``[distributed]`` extra).
The worker returns the record and the *driver* writes the run file, so Ray workers need no
shared filesystem; the package code is shipped to them with the task (``runtime_env``
``py_modules``), the other dependencies must be installed on the cluster.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import hashlib
import multiprocessing
import os
import socket
import subprocess
import sys
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tqdm import tqdm

from sb3_complementary.benchmark.matrix import Matrix, RunSpec
from sb3_complementary.benchmark.matrix_yaml import load_matrix
from sb3_complementary.benchmark.normalize import ensure_random_scores
from sb3_complementary.benchmark.seeds import parse_seeds
from sb3_complementary.benchmark.store import RunState, needs_run, run_state, write_run_file

#: Default output folder (relative to the current directory).
DEFAULT_OUT = Path("docs/benchmarks/runs")

_PACKAGE_DIR = Path(__file__).resolve().parents[1]

OnRecord = Callable[[RunSpec, dict[str, Any]], None]
OnLost = Callable[[RunSpec, str], None]


@dataclass
class Plan:
    """
    What the runner will do.

    :param pending: Runs to execute, in execution order.
    :param states: State of every run of the (restricted) matrix, by run id.
    """

    pending: list[RunSpec]
    states: dict[str, RunState] = field(default_factory=dict)

    def count(self, state: RunState) -> int:
        """:return: Number of runs in ``state``."""
        return sum(1 for s in self.states.values() if s == state)


def plan_runs(matrix: Matrix, out_dir: str | Path, retry_failed: bool = False) -> Plan:
    """
    Classify every run of the matrix and list the pending ones, seed-major.

    :param matrix: The (restricted) matrix.
    :param out_dir: The runs folder.
    :param retry_failed: Whether failed runs are pending too.
    :return: The plan.
    :raises ~.store.RunFileVersionError: if a run file comes from another format version.
    """
    pending = []
    states: dict[str, RunState] = {}
    for spec in matrix.runs():
        state = run_state(out_dir, spec.run_id)
        states[spec.run_id] = state
        if needs_run(state, retry_failed):
            pending.append(spec)
    return Plan(pending=pending, states=states)


def code_provenance() -> dict[str, Any]:
    """
    Which code the driver ran: git commit and dirtiness of the checkout holding the package,
    and a content hash of the package's ``.py`` files (meaningful even for a dirty checkout).

    :return: JSON-safe mapping; git fields are ``None`` outside a git checkout.
    """
    digest = hashlib.sha256()
    for path in sorted(_PACKAGE_DIR.rglob("*.py")):
        digest.update(str(path.relative_to(_PACKAGE_DIR)).encode())
        digest.update(path.read_bytes())
    info: dict[str, Any] = {"package_sha256": digest.hexdigest()[:16], "git_commit": None, "git_dirty": None}
    try:
        root = _PACKAGE_DIR.parent
        commit = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=10, check=True
        ).stdout.strip()
        status = subprocess.run(
            ["git", "status", "--porcelain", "--", str(_PACKAGE_DIR)],
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


# --------------------------------------------------------------------------- backends


def _run_in_process(specs: Sequence[RunSpec], on_record: OnRecord) -> None:
    """Serial, in this process (``--workers 0``): for debugging only, no process isolation."""
    from sb3_complementary.benchmark.run import execute_run

    for spec in specs:
        on_record(spec, execute_run(spec))


def _run_local(specs: Sequence[RunSpec], workers: int, on_record: OnRecord, on_lost: OnLost) -> None:
    """
    ``workers`` local processes (spawn), one fresh process per run where Python allows it.

    At most ``workers`` runs are in flight, so the runs start in the given (seed-major) order.
    A worker that dies without returning (killed, segfault, out of memory) breaks the pool: the
    runs in flight are reported lost (no file, so the next invocation redoes them) and a new
    pool continues with the runs not yet started.
    """
    from sb3_complementary.benchmark.run import execute_run

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


def _import_ray() -> Any:
    try:
        import ray
    except ImportError as exc:
        raise RuntimeError(
            "--ray-address needs Ray, which is not installed: pip install 'sb3-complementary[distributed]' "
            "(or pip install 'ray[default]')"
        ) from exc
    return ray


def _run_ray(specs: Sequence[RunSpec], address: str, workers: int | None, on_record: OnRecord, on_lost: OnLost) -> None:
    """
    Ray tasks (one CPU each). ``address``: ``"local"`` starts a local instance (``workers``
    CPUs, default all), anything else is passed to ``ray.init`` (``"auto"``, ``"ray://host:port"``).
    ``workers``, when given, caps the number of runs in flight (submitted in seed-major order).
    """
    ray = _import_ray()
    from sb3_complementary.benchmark.run import execute_run

    runtime_env = {"py_modules": [str(_PACKAGE_DIR)], "env_vars": {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}}
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


# --------------------------------------------------------------------------- orchestration


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
            _run_ray(pending, ray_address, workers, on_record, on_lost)
        elif workers == 0:
            _run_in_process(pending, on_record)
        else:
            _run_local(pending, workers or 1, on_record, on_lost)
    finally:
        bar.close()
    return summary


def _split(value: str | None) -> list[str] | None:
    if value is None:
        return None
    return [part.strip() for part in value.split(",") if part.strip()]


def build_parser() -> argparse.ArgumentParser:
    """:return: The argument parser of ``python -m sb3_complementary.benchmark``."""
    parser = argparse.ArgumentParser(
        prog="python -m sb3_complementary.benchmark",
        description="Run the pending runs of a benchmark matrix (resumable; finished runs are skipped).",
    )
    parser.add_argument("--matrix", type=Path, default=None, help="matrix YAML (default: the packaged default.yml)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"runs folder (default: {DEFAULT_OUT})")
    parser.add_argument(
        "--workers",
        type=int,
        default=None,
        help="local processes (default 1; 0 = in this process, for debugging). With --ray-address: "
        "CPUs of a 'local' instance and a cap on runs in flight",
    )
    parser.add_argument(
        "--ray-address",
        default=None,
        help="run on Ray: 'auto', 'ray://host:port', or 'local' to start a local instance "
        "(needs the [distributed] extra)",
    )
    parser.add_argument("--only-contenders", default=None, help="comma-separated contender names")
    parser.add_argument("--only-envs", default=None, help="comma-separated suite entry names (or env ids)")
    parser.add_argument("--seeds", default=None, help="seed subset, e.g. '0-4' or '0,3,5-7'")
    parser.add_argument("--retry-failed", action="store_true", help="also re-run runs whose file says failed")
    parser.add_argument("--dry-run", action="store_true", help="list the pending runs and exit")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """
    Entry point of ``python -m sb3_complementary.benchmark``.

    :param argv: Arguments (default ``sys.argv[1:]``).
    :return: Exit status: 0 if nothing failed, 1 if some run failed or was lost, 2 on bad input.
    """
    args = build_parser().parse_args(argv)
    try:
        matrix = load_matrix(args.matrix).select(
            contenders=_split(args.only_contenders),
            envs=_split(args.only_envs),
            seeds=parse_seeds(args.seeds) if args.seeds is not None else None,
        )
        if args.workers is not None and args.workers < 0:
            raise ValueError("--workers must be >= 0")
        plan = plan_runs(matrix, args.out, retry_failed=args.retry_failed)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2

    total = len(plan.states)
    print(
        f"matrix {matrix.source}: {total} runs ({len(matrix.contenders)} contenders x {len(matrix.suite)} entries x "
        f"{len(matrix.seeds)} seeds); done {plan.count('done')}, failed {plan.count('failed')}, "
        f"corrupt {plan.count('corrupt')}, missing {plan.count('missing')}; pending {len(plan.pending)} "
        f"({sum(s.entry.budget for s in plan.pending):,} env steps)"
    )
    if args.dry_run:
        for spec in plan.pending:
            print(f"  {spec.run_id}  [{plan.states[spec.run_id]}]  budget {spec.entry.budget}")
        return 0
    if not plan.pending:
        return 0

    entries = {spec.entry.name: spec.entry for spec in plan.pending}
    print(f"measuring / loading R_random for {sorted(entries)} ...", flush=True)
    ensure_random_scores(
        args.out,
        [(name, entry.eval_env_dict()) for name, entry in entries.items()],  # R_random on what is evaluated
        episodes=matrix.random_policy.episodes,
        seed=matrix.random_policy.seed,
    )
    try:
        summary = execute_plan(
            plan.pending,
            args.out,
            workers=args.workers if (args.workers is not None or args.ray_address) else 1,
            ray_address=args.ray_address,
            progress=not args.no_progress,
        )
    except RuntimeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted: finished runs are saved; run the same command again to resume", file=sys.stderr)
        return 130
    print(f"finished: {len(summary.done)} done, {len(summary.failed)} failed, {len(summary.lost)} lost")
    for run_id in summary.failed:
        print(f"  failed: {run_id} (traceback in its run file)")
    return 0 if not (summary.failed or summary.lost) else 1
