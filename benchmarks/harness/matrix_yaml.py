"""
Reading and validating a benchmark matrix YAML file into a :class:`~benchmarks.harness.matrix.Matrix`.

Everything that can be checked before spending CPU time is checked here, with an error that
names the offending entry: malformed YAML, unknown keys (typos), unknown environment ids,
unknown contenders, missing reference scores, and contender kwargs that would override the
shared hyperparameters (the protocol forbids per-contender tuning).

A minimal matrix::

    seeds: 0-9
    contenders:
      dqn: {algo: dqn}
      complementary-outcome: {algo: complementary, kwargs: {contribution: outcome}}
    suite:
      - env: CartPole-v1
        budget: 50000

See ``benchmarks/matrices/default.yml`` for every supported key.
"""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from benchmarks.harness.envs import check_env_id, import_object_path
from benchmarks.harness.hyperparams import build_hyperparams, zoo_hyperparams
from benchmarks.harness.matrix import Contender, EvalSettings, Matrix, RandomPolicySettings, SuiteEntry
from benchmarks.harness.normalize import ReferenceScore, zoo_reference
from benchmarks.harness.seeds import parse_seeds

#: The lab's matrices (``benchmarks/matrices/``): the screens and studies whose run files are committed.
MATRICES_DIR = Path(__file__).resolve().parents[1] / "matrices"

#: Version of the matrix YAML schema understood by this module.
MATRIX_VERSION = 1

#: Short contender names accepted in ``algo:``. They are resolved lazily, in the run's process.
ALGO_ALIASES: dict[str, str] = {
    "dqn": "stable_baselines3:DQN",
    "per": "sb3_complementary:PrioritizedDQN",
    "complementary": "sb3_complementary:ComplementaryDQN",
}

#: Constructor arguments that a contender may never set: they belong to the harness or to the
#: shared hyperparameters. Keys of every suite entry's hyperparameters are added at load time.
RESERVED_KWARGS = frozenset({"policy", "env", "seed", "device", "verbose", "policy_kwargs", "tensorboard_log"})

_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9.+-]*(_[A-Za-z0-9.+-]+)*$")
_ALGO_RE = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")


def resolve_algo(algo: str, where: str) -> str:
    """
    Resolve an ``algo:`` value to a ``"module:Class"`` path and check that its module exists
    (without importing it: the contender may import heavy code).

    :param algo: Alias (``dqn``, ``per``, ``complementary``) or ``"module:Class"``.
    :param where: Entry name for the error message.
    :return: The ``"module:Class"`` path.
    :raises ValueError: if the contender is unknown.
    """
    path = ALGO_ALIASES.get(algo, algo)
    if not _ALGO_RE.match(path):
        raise ValueError(
            f"unknown contender {where}: algo {algo!r} is neither a known short name "
            f"{sorted(ALGO_ALIASES)} nor a 'module:Class' path"
        )
    module = path.split(":")[0]
    try:
        found = importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        raise ValueError(f"unknown contender {where}: module {module!r} of algo {algo!r} cannot be found")
    return path


def _check_keys(mapping: Mapping[str, Any], allowed: set[str], where: str) -> None:
    unknown = sorted(set(mapping) - allowed)
    if unknown:
        raise ValueError(f"{where}: unknown key(s) {unknown}; allowed: {sorted(allowed)}")


def _check_numbers(mapping: Mapping[str, Any], kinds: Mapping[str, type], where: str) -> None:
    for key, kind in kinds.items():
        if key not in mapping:
            continue
        value = mapping[key]
        ok = isinstance(value, (int, float)) if kind is float else isinstance(value, int)
        if not ok or isinstance(value, bool):
            raise ValueError(f"{where}: {key} must be {'a number' if kind is float else 'an integer'}, got {value!r}")


def _check_name(name: Any, where: str) -> str:
    if not isinstance(name, str) or not _NAME_RE.match(name) or "__" in name:
        raise ValueError(
            f"{where}: name {name!r} must be letters, digits, '.', '+', '-' or single '_' "
            "(it is used in file names; '__' separates fields)"
        )
    return name


def _mapping(value: Any, where: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ValueError(f"{where}: expected a mapping, got {type(value).__name__}")
    return {str(k): v for k, v in value.items()}


def _parse_contenders(raw: Any) -> tuple[Contender, ...]:
    if not isinstance(raw, Mapping) or not raw:
        raise ValueError("matrix: 'contenders' must be a non-empty mapping of name -> {algo, kwargs}")
    contenders = []
    for name, spec in raw.items():
        where = f"contender {name!r}"
        _check_name(name, where)
        if isinstance(spec, str):
            spec = {"algo": spec}
        spec = _mapping(spec, where)
        _check_keys(spec, {"algo", "kwargs"}, where)
        if "algo" not in spec or not isinstance(spec["algo"], str):
            raise ValueError(f"{where}: 'algo' (a short name or 'module:Class') is required")
        algo = resolve_algo(spec["algo"], where)
        kwargs = _mapping(spec.get("kwargs"), f"{where} kwargs")
        contenders.append(Contender(name=name, algo=algo, kwargs=kwargs))
    return tuple(contenders)


_SUITE_KEYS = {
    "name",
    "env",
    "budget",
    "env_kwargs",
    "eval_env_kwargs",
    "eval_task",
    "wrappers",
    "hyperparams",
    "zoo_id",
    "r_ref",
    "r_ref_source",
}


def _parse_entry(raw: Any, index: int, zoo_algo: str) -> SuiteEntry:
    where = f"suite entry #{index}"
    spec = _mapping(raw, where)
    if "env" in spec:
        where = f"suite entry {spec.get('name', spec['env'])!r}"
    _check_keys(spec, _SUITE_KEYS, where)
    env_id = spec.get("env")
    if not isinstance(env_id, str):
        raise ValueError(f"{where}: 'env' (a gymnasium id, 'module:EnvId' or 'module:Callable') is required")
    check_env_id(env_id, where)
    if "name" not in spec and ":" in env_id:
        raise ValueError(f"{where}: an entry point needs a 'name' (used in file names and tables)")
    name = _check_name(spec.get("name", env_id), where)
    budget = spec.get("budget")
    if isinstance(budget, float) and budget.is_integer():
        budget = int(budget)
    if not isinstance(budget, int) or isinstance(budget, bool) or budget <= 0:
        raise ValueError(f"{where}: 'budget' must be a positive integer number of env steps, got {budget!r}")
    wrappers = spec.get("wrappers") or []
    if not isinstance(wrappers, list) or not all(isinstance(w, str) for w in wrappers):
        raise ValueError(f"{where}: 'wrappers' must be a list of 'module:Wrapper' strings")
    for wrapper in wrappers:
        try:
            import_object_path(wrapper)
        except (ImportError, AttributeError, ValueError) as exc:
            raise ValueError(f"{where}: wrapper {wrapper!r} cannot be imported: {exc}") from exc
    raw_hp = spec.get("hyperparams", "zoo")
    if raw_hp == "zoo":
        try:
            hyperparams = zoo_hyperparams(str(spec.get("zoo_id", env_id)), zoo_algo)
        except ValueError as exc:
            raise ValueError(f"{where}: {exc}") from exc
    elif isinstance(raw_hp, Mapping):
        try:
            hyperparams = build_hyperparams(_mapping(raw_hp, where), source=f"matrix YAML [{name}]")
        except ValueError as exc:
            raise ValueError(f"{where}: {exc}") from exc
    else:
        raise ValueError(f"{where}: 'hyperparams' must be 'zoo' or a mapping, got {raw_hp!r}")
    if "r_ref" in spec:
        r_ref = spec["r_ref"]
        if not isinstance(r_ref, (int, float)) or isinstance(r_ref, bool):
            raise ValueError(f"{where}: 'r_ref' must be a number")
        source = spec.get("r_ref_source")
        if not isinstance(source, str) or not source.strip():
            raise ValueError(f"{where}: 'r_ref' needs an 'r_ref_source' saying where the number comes from")
        reference = ReferenceScore(float(r_ref), source)
    else:
        found = zoo_reference(str(spec.get("zoo_id", env_id)), zoo_algo)
        if found is None:
            raise ValueError(
                f"{where}: no rl-zoo3 {zoo_algo.upper()} reference score is known for {env_id!r}; "
                "state 'r_ref' and 'r_ref_source'"
            )
        reference = found
    eval_task = spec.get("eval_task")
    if eval_task not in (None, "training"):
        raise ValueError(f"{where}: 'eval_task' must be 'training' (or absent), got {eval_task!r}")
    return SuiteEntry(
        name=name,
        env_id=env_id,
        budget=budget,
        hyperparams=hyperparams,
        reference=reference,
        env_kwargs=_mapping(spec.get("env_kwargs"), f"{where} env_kwargs"),
        wrappers=tuple(wrappers),
        eval_env_kwargs=(
            _mapping(spec["eval_env_kwargs"], f"{where} eval_env_kwargs") if "eval_env_kwargs" in spec else None
        ),
        eval_task=eval_task,
    )


def parse_matrix(raw: Any, source: str = "<memory>") -> Matrix:
    """
    Validate a matrix already loaded from YAML.

    :param raw: The loaded YAML document.
    :param source: Its path, for error messages.
    :return: The validated matrix.
    :raises ValueError: naming the offending entry.
    """
    if not isinstance(raw, Mapping):
        raise ValueError(f"matrix {source}: the top level must be a mapping")
    doc = {str(k): v for k, v in raw.items()}
    _check_keys(
        doc,
        {"version", "title", "seeds", "zoo_algo", "eval", "random_policy", "device", "contenders", "suite"},
        f"matrix {source}",
    )
    version = doc.get("version", MATRIX_VERSION)
    if version != MATRIX_VERSION:
        raise ValueError(f"matrix {source}: version {version!r} is not supported (this harness reads {MATRIX_VERSION})")
    if "seeds" not in doc:
        raise ValueError(f"matrix {source}: 'seeds' is required (e.g. '0-9')")
    seeds = parse_seeds(doc["seeds"])

    eval_doc = _mapping(doc.get("eval"), "eval")
    _check_keys(eval_doc, {"fraction", "episodes", "seed_offset"}, "eval")
    _check_numbers(eval_doc, {"fraction": float, "episodes": int, "seed_offset": int}, "eval")
    evaluation = EvalSettings(**eval_doc)
    n_points = 1.0 / evaluation.fraction if evaluation.fraction > 0 else 0.0
    if not 0 < evaluation.fraction <= 1 or abs(n_points - round(n_points)) > 1e-9:
        raise ValueError(f"eval: fraction must divide 1 exactly (e.g. 0.05), got {evaluation.fraction}")
    if evaluation.episodes < 1:
        raise ValueError("eval: episodes must be >= 1")

    random_doc = _mapping(doc.get("random_policy"), "random_policy")
    _check_keys(random_doc, {"episodes", "seed"}, "random_policy")
    _check_numbers(random_doc, {"episodes": int, "seed": int}, "random_policy")
    random_policy = RandomPolicySettings(**random_doc)
    if random_policy.episodes < 1:
        raise ValueError("random_policy: episodes must be >= 1")

    contenders = _parse_contenders(doc.get("contenders"))
    raw_suite = doc.get("suite")
    if not isinstance(raw_suite, list) or not raw_suite:
        raise ValueError(f"matrix {source}: 'suite' must be a non-empty list of entries")
    zoo_algo = doc.get("zoo_algo", "dqn")
    if not isinstance(zoo_algo, str) or not zoo_algo.isidentifier():
        raise ValueError(f"matrix {source}: zoo_algo must be an rl-zoo3 algorithm name such as 'dqn' or 'sac'")
    suite = tuple(_parse_entry(entry, index, zoo_algo) for index, entry in enumerate(raw_suite))

    for kind, names in (("contender", [c.name for c in contenders]), ("suite entry", [e.name for e in suite])):
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"matrix {source}: duplicate {kind} name(s) {duplicates}")
    for entry in suite:
        if entry.budget < len(evaluation.timesteps(entry.budget)):
            raise ValueError(f"suite entry {entry.name!r}: budget {entry.budget} is smaller than the number of evals")

    shared = set(RESERVED_KWARGS)
    for entry in suite:
        shared.update(entry.hyperparams.model_kwargs)
    for contender in contenders:
        clash = sorted(shared & set(contender.kwargs))
        if clash:
            raise ValueError(
                f"contender {contender.name!r}: kwargs {clash} are shared hyperparameters or harness settings; "
                "the protocol gives every contender identical hyperparameters"
            )
    device = doc.get("device", "cpu")
    if not isinstance(device, str):
        raise ValueError(f"matrix {source}: device must be a string")
    title = _title(doc, source)
    return Matrix(
        contenders=contenders,
        suite=suite,
        seeds=seeds,
        evaluation=evaluation,
        random_policy=random_policy,
        device=device,
        source=source,
        title=title,
    )


def _title(doc: Mapping[str, Any], source: str) -> str | None:
    """:return: The matrix's ``title`` (``None`` when it has none)."""
    title = doc.get("title")
    if title is not None and (not isinstance(title, str) or not title.strip() or "\n" in title.strip()):
        raise ValueError(f"matrix {source}: title must be a one-line string")
    return title.strip() if title is not None else None


def read_title(path: str | Path) -> str:
    """
    The title of a matrix, read without validating the rest of it: the report needs only the title,
    and a matrix's entries may need extras (Box2D, MuJoCo) that drawing a page from run files does not.

    :param path: The matrix YAML file.
    :return: Its ``title``.
    :raises ValueError: if the file cannot be read or has no title.
    """
    try:
        raw = yaml.safe_load(Path(path).read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise ValueError(f"cannot read matrix {path}: {exc}") from exc
    title = _title(raw, str(path)) if isinstance(raw, Mapping) else None
    if title is None:
        raise ValueError(f"matrix {path} has no 'title' to head its results page")
    return title


def default_matrix_path(name: str = "default.yml") -> Path:
    """
    :param name: File name inside the ``benchmarks/matrices/`` folder of the checkout.
    :return: Path of one of the lab's matrices.
    """
    return MATRICES_DIR / name


def load_matrix(path: str | Path | None = None) -> Matrix:
    """
    Read and validate a matrix YAML file.

    :param path: The file (``None``: ``benchmarks/matrices/default.yml``).
    :return: The validated matrix.
    :raises ValueError: on malformed YAML or an invalid entry, naming the file and the entry.
    """
    path = default_matrix_path() if path is None else Path(path)
    try:
        text = path.read_text()
    except OSError as exc:
        raise ValueError(f"cannot read matrix {path}: {exc}") from exc
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ValueError(f"matrix {path} is not valid YAML: {exc}") from exc
    try:
        return parse_matrix(raw, source=str(path))
    except ValueError as exc:
        message = str(exc)
        raise ValueError(message if str(path) in message else f"{path}: {message}") from exc
