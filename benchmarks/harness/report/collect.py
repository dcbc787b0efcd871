"""
Reading the run files of a folder, checking that they can be aggregated, and arranging their curves.

Runs of one environment with different budgets, eval grids or R_ref are never aggregated:
:func:`collect` stops with :class:`BudgetMismatchError` naming them. A contender is aggregated over
its seeds done on every environment (:attr:`ReportData.complete_seeds`), since rliable's score
matrices need every environment for every run.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.harness.normalize import ensure_random_scores, load_random_scores, normalized_score
from benchmarks.harness.store import RunRecord, scan_runs

#: Contenders listed first, in this order; the others follow alphabetically.
PREFERRED_ORDER = ("dqn", "per", "complementary")


class BudgetMismatchError(ValueError):
    """Runs of one environment that do not share a budget or eval grid: they cannot be aggregated."""


@dataclass
class ReportData:
    """
    Everything the page and the figures are made from.

    :param records: All whole run files (done and failed).
    :param corrupt: Run files that could not be read.
    :param envs: Environment (suite entry) names, sorted.
    :param contenders: Contender names, in display order.
    :param r_random: R_random per environment.
    :param r_ref: R_ref per environment, with its source.
    :param curves: ``curves[contender][env]``: ``{seed: raw mean returns (n_evals,)}`` of done runs.
    :param timesteps: Eval grid per environment, shape ``(n_evals,)``.
    :param complete_seeds: Per contender, the seeds done on every environment (used in aggregates).
    """

    records: list[RunRecord]
    corrupt: list[Path]
    envs: list[str]
    contenders: list[str]
    r_random: dict[str, float]
    r_ref: dict[str, tuple[float, str]]
    curves: dict[str, dict[str, dict[int, np.ndarray]]]
    timesteps: dict[str, np.ndarray]
    complete_seeds: dict[str, list[int]] = field(default_factory=dict)

    def normalized(self, contender: str, env: str, seed: int) -> np.ndarray:
        """:return: Normalised curve of one run, shape ``(n_evals,)``."""
        return normalized_score(self.curves[contender][env][seed], self.r_random[env], self.r_ref[env][0])

    def score_matrix(self, contender: str, metric: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
        """
        :param contender: Contender name.
        :param metric: :func:`~benchmarks.harness.metrics.auc` or
            :func:`~benchmarks.harness.metrics.final_score`.
        :return: Scores of its complete seeds, shape ``(n_seeds, n_envs)`` (rliable's layout).
        """
        seeds = self.complete_seeds[contender]
        return np.array(
            [[float(metric(self.normalized(contender, env, seed))) for env in self.envs] for seed in seeds],
            dtype=np.float64,
        ).reshape(len(seeds), len(self.envs))


def order_contenders(names: Sequence[str]) -> list[str]:
    """:return: ``names`` with :data:`PREFERRED_ORDER` first, then alphabetical."""
    unique = sorted(set(names))
    return [n for n in PREFERRED_ORDER if n in unique] + [n for n in unique if n not in PREFERRED_ORDER]


def check_budgets(records: Sequence[RunRecord]) -> None:
    """
    Refuse to aggregate runs of one environment with different budgets, eval grids or R_ref.

    :param records: All whole run files.
    :raises BudgetMismatchError: naming the runs of each mismatching group.
    """
    problems = []
    by_env: dict[str, list[RunRecord]] = defaultdict(list)
    for record in records:
        by_env[record.env].append(record)
    for env, group in sorted(by_env.items()):
        checks: list[tuple[str, Callable[[RunRecord], Any], list[RunRecord]]] = [
            ("budget", lambda r: r.budget, group),
            ("eval grid", lambda r: tuple(r.timesteps.tolist()), [r for r in group if r.status == "done"]),
            ("R_ref", lambda r: r.r_ref, group),
        ]
        for what, key, members in checks:
            values: dict[Any, list[str]] = defaultdict(list)
            for record in members:
                values[key(record)].append(record.path.name)
            if len(values) > 1:
                lines = [
                    f"    {what} {_short(value)}: {len(files)} run(s): {', '.join(sorted(files))}"
                    for value, files in sorted(values.items(), key=lambda kv: -len(kv[1]))
                ]
                problems.append(f"  {env}: runs with different {what}s:\n" + "\n".join(lines))
    if problems:
        raise BudgetMismatchError(
            "refusing to aggregate runs with mismatched budgets (move the odd ones to another folder):\n"
            + "\n".join(problems)
        )


def _short(value: Any) -> str:
    """:return: ``value`` for an error message; an eval grid of more than 4 points abridged to its ends."""
    if isinstance(value, tuple) and len(value) > 4:
        return f"({value[0]}, {value[1]}, ..., {value[-1]}; {len(value)} points)"
    return str(value)


def _evaluated_env(env: dict[str, Any]) -> dict[str, Any]:
    """The env a run was evaluated on (its R_random env): recorded ``eval_env_kwargs`` merged over ``env_kwargs``."""
    kwargs = {**env["env_kwargs"], **(env.get("eval_env_kwargs") or {})}
    return {"env_id": env["env_id"], "env_kwargs": kwargs, "wrappers": env["wrappers"]}


def collect(runs_dir: str | Path) -> ReportData:
    """
    Read and check the run files of a folder.

    :param runs_dir: The runs folder.
    :return: The data of the report.
    :raises ValueError: if there is no run file.
    :raises BudgetMismatchError: if runs of one environment cannot be compared.
    """
    records, corrupt = scan_runs(runs_dir)
    if not records:
        raise ValueError(f"no readable run file in {runs_dir}" + (f" ({len(corrupt)} corrupt)" if corrupt else ""))
    check_budgets(records)
    envs = sorted({r.env for r in records})
    contenders = order_contenders([r.contender for r in records])

    r_random_cache = load_random_scores(runs_dir)
    missing = [env for env in envs if env not in r_random_cache]
    if missing:  # the runner caches these; measure here only for run folders made without it
        described = {r.env: _evaluated_env(r.data["env"]) for r in records}
        r_random_cache = ensure_random_scores(runs_dir, [(env, described[env]) for env in missing], 100, 0)
    r_random = {env: r_random_cache[env].mean for env in envs}
    r_ref = {}
    for record in records:
        r_ref[record.env] = (record.r_ref, record.r_ref_source)

    curves: dict[str, dict[str, dict[int, np.ndarray]]] = {c: {e: {} for e in envs} for c in contenders}
    timesteps: dict[str, np.ndarray] = {}
    for record in records:
        if record.status == "done":
            curves[record.contender][record.env][record.seed] = record.mean_returns
            timesteps[record.env] = record.timesteps
    data = ReportData(
        records=records,
        corrupt=corrupt,
        envs=envs,
        contenders=contenders,
        r_random=r_random,
        r_ref=r_ref,
        curves=curves,
        timesteps=timesteps,
    )
    for contender in contenders:
        seed_sets = [set(curves[contender][env]) for env in envs]
        data.complete_seeds[contender] = sorted(set.intersection(*seed_sets)) if seed_sets else []
    return data
