"""
The benchmark matrix: contenders x suite entries x seeds, as validated dataclasses, and its expansion
into runs (:meth:`Matrix.runs`) and restriction (:meth:`Matrix.select`).

A matrix is read from a YAML file by :func:`~benchmarks.harness.matrix_yaml.load_matrix`,
which checks it before any CPU time is spent.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from benchmarks.harness.hyperparams import Hyperparams
from benchmarks.harness.normalize import ReferenceScore


@dataclass(frozen=True)
class Contender:
    """
    One algorithm configuration.

    :param name: Unique name, used in file names and tables (e.g. ``"complementary-td"``).
    :param algo: ``"module:Class"`` path of an SB3 off-policy algorithm class; aliases are already resolved.
    :param kwargs: Extra constructor kwargs of this contender (never a shared hyperparameter).
    """

    name: str
    algo: str
    kwargs: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """:return: JSON-safe representation."""
        return {"name": self.name, "algo": self.algo, "kwargs": self.kwargs}


@dataclass(frozen=True)
class SuiteEntry:
    """
    One environment with its step budget and the hyperparameters all contenders share on it.

    :param name: Unique name, used in file names and tables (defaults to ``env_id``).
    :param env_id: A registered gymnasium id, or a ``"module:Callable"`` entry point.
    :param budget: Number of environment steps of one run.
    :param hyperparams: Shared hyperparameters (rl-zoo3's entry for the matrix's ``zoo_algo``,
        or stated in the YAML).
    :param reference: R_ref of the normalised score, with its source.
    :param env_kwargs: Keyword arguments of the environment constructor.
    :param wrappers: ``"module:Wrapper"`` paths applied in order, innermost first.
    :param eval_env_kwargs: Keyword arguments that the evaluation env (and the random-policy
        measurement) takes instead of ``env_kwargs`` (merged over them), or None: the same env. A
        multi-task entry trains on one task schedule and evaluates every task in turn.
    :param eval_task: ``"training"``: before every evaluation, pin the evaluation env (a
        ``MultiTaskEnv``) to the task the training env runs at that moment (the drift entry:
        the agent is scored on the task it is learning now); None: the evaluation env's own schedule.
    """

    name: str
    env_id: str
    budget: int
    hyperparams: Hyperparams
    reference: ReferenceScore
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    wrappers: tuple[str, ...] = ()
    eval_env_kwargs: dict[str, Any] | None = None
    eval_task: str | None = None

    def env_dict(self) -> dict[str, Any]:
        """:return: JSON-safe description of the environment (what :func:`~.envs.make_env` needs)."""
        return {"env_id": self.env_id, "env_kwargs": self.env_kwargs, "wrappers": list(self.wrappers)}

    def eval_env_dict(self) -> dict[str, Any]:
        """:return: Same as :meth:`env_dict`, for the evaluation env (``eval_env_kwargs`` merged in)."""
        return {**self.env_dict(), "env_kwargs": {**self.env_kwargs, **(self.eval_env_kwargs or {})}}

    def to_dict(self) -> dict[str, Any]:
        """:return: JSON-safe representation (stored in every run file)."""
        extra: dict[str, Any] = {} if self.eval_env_kwargs is None else {"eval_env_kwargs": self.eval_env_kwargs}
        if self.eval_task is not None:
            extra["eval_task"] = self.eval_task
        return {
            "name": self.name,
            **self.env_dict(),
            **extra,
            "budget": self.budget,
            "r_ref": self.reference.score,
            "r_ref_source": self.reference.source,
        }


@dataclass(frozen=True)
class EvalSettings:
    """
    How a run is evaluated.

    :param fraction: Evaluate every ``fraction`` of the budget (0.05: 20 evaluations).
    :param episodes: Deterministic episodes per evaluation.
    :param seed_offset: The eval env of the run with seed ``s`` is reseeded with ``s + seed_offset``
        before every evaluation, so every eval point of a run sees the same start states.
    """

    fraction: float = 0.05
    episodes: int = 10
    seed_offset: int = 10_000

    def timesteps(self, budget: int) -> list[int]:
        """
        :param budget: Step budget of the run.
        :return: The env step counts at which the run is evaluated (the last one is ``budget``).
        """
        n_points = round(1.0 / self.fraction)
        return [round(budget * k / n_points) for k in range(1, n_points + 1)]


@dataclass(frozen=True)
class RandomPolicySettings:
    """
    How R_random, the score of a uniform-random policy, is measured.

    :param episodes: Number of episodes averaged.
    :param seed: Seed of the environment and of the action sampling.
    """

    episodes: int = 100
    seed: int = 0


@dataclass(frozen=True)
class RunSpec:
    """
    One run: a contender on a suite entry with one seed. Picklable, so it can be shipped to a
    worker process or a Ray task.

    :param contender: The contender.
    :param entry: The suite entry.
    :param seed: The seed (model, exploration, training env).
    :param evaluation: Evaluation settings.
    :param device: Torch device of the model (``"cpu"`` keeps the wall-clock comparable).
    """

    contender: Contender
    entry: SuiteEntry
    seed: int
    evaluation: EvalSettings
    device: str = "cpu"

    @property
    def run_id(self) -> str:
        """:return: ``"<contender>__<entry>__s<seed>"``, also the run file's stem."""
        return f"{self.contender.name}__{self.entry.name}__s{self.seed}"


@dataclass(frozen=True)
class Matrix:
    """
    A validated benchmark matrix.

    :param contenders: Contenders, in YAML order.
    :param suite: Suite entries, in YAML order.
    :param seeds: Seeds, sorted.
    :param evaluation: Evaluation settings shared by all runs.
    :param random_policy: R_random measurement settings.
    :param device: Torch device of every run.
    :param source: Path or name of the YAML it was read from.
    :param title: What the matrix measures, in a few words: the H1 of its results page
        (:mod:`benchmarks.harness.report`), so that every page says which screen or study it shows.
    """

    contenders: tuple[Contender, ...]
    suite: tuple[SuiteEntry, ...]
    seeds: tuple[int, ...]
    evaluation: EvalSettings = EvalSettings()
    random_policy: RandomPolicySettings = RandomPolicySettings()
    device: str = "cpu"
    source: str = "<memory>"
    title: str | None = None

    def runs(self) -> list[RunSpec]:
        """
        All runs, ordered so that a partially filled matrix stays balanced: every contender and
        suite entry of seed 0 first, then seed 1, and so on.

        :return: The run specs.
        """
        return [
            RunSpec(contender=contender, entry=entry, seed=seed, evaluation=self.evaluation, device=self.device)
            for seed in self.seeds
            for entry in self.suite
            for contender in self.contenders
        ]

    def select(
        self,
        contenders: Sequence[str] | None = None,
        envs: Sequence[str] | None = None,
        seeds: Iterable[int] | None = None,
    ) -> Matrix:
        """
        Restrict the matrix (the ``--only-contenders``, ``--only-envs`` and ``--seeds`` flags).

        :param contenders: Contender names to keep (``None``: all).
        :param envs: Suite entry names or env ids to keep (``None``: all).
        :param seeds: Seeds to keep (``None``: all).
        :return: The restricted matrix.
        :raises ValueError: naming any name or seed that is not in the matrix.
        """
        result = self
        if contenders is not None:
            known = [c.name for c in self.contenders]
            unknown = [name for name in contenders if name not in known]
            if unknown:
                raise ValueError(f"unknown contender(s) {unknown} in {self.source}; known: {known}")
            result = replace(result, contenders=tuple(c for c in self.contenders if c.name in contenders))
        if envs is not None:
            known = [e.name for e in self.suite]
            unknown = [name for name in envs if not any(name in (e.name, e.env_id) for e in self.suite)]
            if unknown:
                raise ValueError(f"unknown suite entr(y/ies) {unknown} in {self.source}; known: {known}")
            result = replace(result, suite=tuple(e for e in self.suite if e.name in envs or e.env_id in envs))
        if seeds is not None:
            wanted = sorted(set(seeds))
            unknown_seeds = [s for s in wanted if s not in self.seeds]
            if unknown_seeds:
                raise ValueError(f"seed(s) {unknown_seeds} are not in {self.source} (seeds: {list(self.seeds)})")
            result = replace(result, seeds=tuple(wanted))
        return result
