"""
The protocol's goals per suite (docs/benchmarks/protocol.md, "Goals"): the target against the
reference (DQN), the other baselines (PER) and the ``alpha=0`` control, on each suite's entries.

A suite is a named list of entries (``"classic=CartPole-v1,MountainCar-v0;non-stationary=..."``).
The goals are:

- against the reference: an IQM AUC ratio of at least :data:`REFERENCE_RATIO_GOAL` of the suite and
  a lower bound of the P(target > reference) CI above 0.5;
- against every other baseline: not worse, an IQM AUC ratio of at least 1;
- against the control: a lower P bound above 0.5 on at least one suite (the proof that the learned
  part changes the outcome).

Each comparison uses the seeds that both contenders have done on every entry of the suite, so a
suite is judged as soon as its own entries are complete.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from benchmarks.harness.metrics import auc
from benchmarks.harness.report.collect import ReportData
from benchmarks.harness.report.statistics import Interval, interval_estimates, iqm_ratios, to_interval

#: The protocol's two suites, as the study's matrices name their entries.
PROTOCOL_SUITES = (
    "classic=CartPole-v1,MountainCar-v0,LunarLander-v3,BitFlipping-10;"
    "non-stationary=CartPole-drift,CartPole-family-uniform,CartPole-family-sequential"
)
#: Minimum IQM AUC ratio to the reference (DQN), per suite.
REFERENCE_RATIO_GOAL = {"classic": 1.10, "non-stationary": 1.20}


@dataclass
class SuiteComparison:
    """
    The target against one other contender on one suite.

    :param suite: Suite name (a key of :data:`REFERENCE_RATIO_GOAL`).
    :param role: ``"reference"``, ``"baseline"`` or ``"control"``: which goal applies.
    :param other: The other contender.
    :param entries: The suite's entries.
    :param envs: The suite's entries on which both have runs.
    :param missing: The suite's entries on which either has none (the suite is not complete).
    :param seeds: The seeds both have done on every entry of ``envs``.
    :param ratio: IQM AUC of the target over the other's, with its stratified-bootstrap 95% CI.
    :param p: P(target > other) on AUC, with its 95% CI.
    """

    suite: str
    role: str
    other: str
    entries: list[str]
    envs: list[str]
    missing: list[str]
    seeds: list[int]
    ratio: Interval | None
    p: Interval | None

    @property
    def goal(self) -> str:
        """The goal this comparison is judged by, in words."""
        if self.role == "reference":
            return f"≥ {REFERENCE_RATIO_GOAL[self.suite]:.2f}×, P low > 0.5"
        if self.role == "baseline":
            return "not worse (ratio ≥ 1.00)"
        return "P low > 0.5 on one suite"

    @property
    def met(self) -> bool | None:
        """Whether the figures meet :attr:`goal` (``None`` until both contenders have every entry of the suite)."""
        if self.ratio is None or self.p is None or self.missing:
            return None
        if self.role == "reference":
            return self.ratio.point >= REFERENCE_RATIO_GOAL[self.suite] and self.p.low > 0.5
        if self.role == "baseline":
            return self.ratio.point >= 1.0
        return self.p.low > 0.5


def parse_suites(text: str) -> dict[str, list[str]]:
    """
    :param text: ``"classic=A,B;non-stationary=C"``.
    :return: ``{"classic": ["A", "B"], "non-stationary": ["C"]}``.
    :raises ValueError: naming a suite that the protocol has no goal for, or one with no entry.
    """
    suites: dict[str, list[str]] = {}
    for part in filter(None, (p.strip() for p in text.split(";"))):
        name, _, members = part.partition("=")
        name = name.strip()
        if name not in REFERENCE_RATIO_GOAL:
            raise ValueError(f"suite {name!r} has no goal in the protocol; use one of {sorted(REFERENCE_RATIO_GOAL)}")
        suites[name] = [m.strip() for m in members.split(",") if m.strip()]
        if not suites[name]:
            raise ValueError(f"suite {name!r} names no entry: write it as '{name}=EnvA,EnvB'")
    return suites


def shared_seeds(data: ReportData, contenders: Sequence[str], envs: Sequence[str]) -> list[int]:
    """:return: The seeds that every contender has done on every entry of ``envs``."""
    seed_sets = [set(data.curves.get(c, {}).get(e, {})) for c in contenders for e in envs]
    return sorted(set.intersection(*seed_sets)) if seed_sets else []


def probability_of_improvement(scores_x: np.ndarray, scores_y: np.ndarray, reps: int, seed: int) -> Interval:
    """P(x > y) over the entries on AUC scores ``(n_seeds, n_envs)``, with its stratified-bootstrap 95% CI."""
    from rliable import metrics as rly_metrics

    points, cis = interval_estimates(
        {"p": (scores_x, scores_y)}, rly_metrics.probability_of_improvement, reps=reps, seed=seed
    )
    return to_interval(points["p"], cis["p"])


def suite_comparisons(
    data: ReportData,
    target: str,
    reference: str,
    baselines: Sequence[str],
    control: str | None,
    suites: dict[str, list[str]],
    reps: int = 2000,
    seed: int = 0,
    seeds: Sequence[int] | None = None,
) -> list[SuiteComparison]:
    """
    The target against the reference, each other baseline and the control, suite by suite.

    :param data: Collected runs.
    :param target: Contender whose goals are checked.
    :param reference: Contender of the suite's ratio goal (DQN).
    :param baselines: Contenders the target must not be worse than (PER); the reference and the
        control are skipped here.
    :param control: The ``alpha=0`` control (``None``: no control row).
    :param suites: Suite name -> entries (:func:`parse_suites`).
    :param reps: Bootstrap replications.
    :param seed: Bootstrap seed.
    :param seeds: Only these seeds (a held-out replication); default: every shared seed.
    :return: One comparison per (suite, other contender), in the order reference, baselines, control.
    """
    others = [(reference, "reference")]
    others += [(b, "baseline") for b in baselines if b not in (reference, control, target)]
    if control:
        others.append((control, "control"))
    out = []
    for suite, members in suites.items():
        for other, role in others:
            envs = [e for e in members if e in data.envs and data.curves.get(target, {}).get(e)]
            envs = [e for e in envs if data.curves.get(other, {}).get(e)]
            common = shared_seeds(data, (target, other), envs)
            if seeds is not None:
                common = [s for s in common if s in set(seeds)]
            missing = [e for e in members if e not in envs]
            ratio = p = None
            if envs and common:
                subset = dataclasses.replace(data, envs=envs, complete_seeds={target: common, other: common})
                scores = {c: subset.score_matrix(c, auc) for c in (target, other)}
                ratio = iqm_ratios(scores, [target], other, reps, seed)[target]
                p = probability_of_improvement(scores[target], scores[other], reps, seed)
            out.append(SuiteComparison(suite, role, other, list(members), envs, missing, common, ratio, p))
    return out
