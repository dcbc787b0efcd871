"""
The plan of one runner invocation: the state of every run of the matrix, and the pending runs, seed-major.

Runs whose file is missing or corrupt are pending; finished ones (done or failed) are skipped,
so the runner can be stopped and started again at will and the matrix fills up over many
invocations. Pending runs are ordered seed-major (seed 0 of every contender and entry, then
seed 1, ...) so that a partial matrix stays balanced.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.harness.matrix import Matrix, RunSpec
from benchmarks.harness.store import RunState, needs_run, run_state


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
