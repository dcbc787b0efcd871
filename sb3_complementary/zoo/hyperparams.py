"""
Reading an rl-zoo3 hyperparameter file: which entry an env gets, and which keys an entry may hold.

rl-zoo3 (``ExperimentManager.read_hyperparameters``) accepts a YAML file, a Python file that
defines a dict named ``hyperparams``, or an importable module with such a dict. It picks the
entry named like the env, else ``atari`` for an Atari env, else ``default``, and passes every
key it does not consume itself to the algorithm's constructor. This module applies the same
rules *before* rl-zoo3 does, so that bad input fails with a message that says what to do:

- an env without an entry: the envs that have entries and what ``default`` does;
- a key that is neither a constructor parameter nor an rl-zoo3 experiment key: its name and
  the closest valid spellings, instead of a ``TypeError`` from deep inside the constructor.
"""

import difflib
import importlib
import inspect
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

#: Entry used for every Atari env without its own entry.
ATARI_KEY = "atari"
#: Entry used for every other env without its own entry.
DEFAULT_KEY = "default"

#: Keys rl-zoo3's ExperimentManager consumes itself (rl_zoo3 2.9: ``_preprocess_hyperparams``,
#: ``_preprocess_normalization``, ``_preprocess_action_noise``); they never reach the constructor.
ZOO_EXPERIMENT_KEYS = frozenset(
    {
        "n_timesteps",
        "n_envs",
        "env_wrapper",
        "vec_env_wrapper",
        "frame_stack",
        "normalize",
        "callback",
        "monitor_kwargs",
        "env_kwargs",
        "noise_type",
        "noise_std",
    }
)

#: Constructor parameters rl-zoo3 always passes itself, with the flag that sets each.
ZOO_RESERVED_KEYS = {
    "env": "--env",
    "seed": "--seed",
    "verbose": "--verbose",
    "device": "--device",
    "tensorboard_log": "--tensorboard-log",
}


class HyperparamsError(ValueError):
    """A hyperparameter file or override that rl-zoo3 could not use; the message says why and what to do."""


def load_hyperparams_file(config: str) -> dict[str, Any]:
    """
    Load a hyperparameter table the way rl-zoo3 does.

    :param config: A ``.yml``/``.yaml`` file, a ``.py`` file defining ``hyperparams``, or the
        dotted name of an importable module defining ``hyperparams``.
    :return: The table: entry name (env id, ``atari``, ``default``) -> hyperparameters.
    :raises HyperparamsError: if the file is missing or is not a table of mappings.
    """
    if config.endswith((".yml", ".yaml", ".py")):
        path = Path(config)
        if not path.is_file():
            raise HyperparamsError(f"hyperparameter file not found: {config}")
        if path.suffix == ".py":
            namespace: dict[str, Any] = {}
            exec(compile(path.read_text(), str(path), "exec"), namespace)
            if "hyperparams" not in namespace:
                raise HyperparamsError(f"{config} must define a dict named 'hyperparams' (env id -> hyperparameters)")
            table = namespace["hyperparams"]
        else:
            with open(path) as file:
                table = yaml.safe_load(file)
    else:
        try:
            table = importlib.import_module(config).hyperparams
        except (ImportError, AttributeError) as exc:
            raise HyperparamsError(
                f"--conf-file {config!r} is neither a .yml/.yaml/.py file nor an importable module "
                f"defining 'hyperparams' ({exc})"
            ) from exc
    if not isinstance(table, Mapping) or not all(isinstance(entry, Mapping) for entry in table.values()):
        raise HyperparamsError(
            f"{config} must map entry names (env ids, 'atari', 'default') to mappings of hyperparameters"
        )
    return dict(table)


def env_entries(table: Mapping[str, Any]) -> list[str]:
    """:return: The env ids that have their own entry (``atari`` and ``default`` left out), sorted."""
    return sorted(key for key in table if key not in (ATARI_KEY, DEFAULT_KEY))


def select_entry(table: Mapping[str, Any], env_id: str, is_atari: bool, source: str) -> str:
    """
    Pick the entry rl-zoo3 will use for ``env_id`` (same rule), explaining any fallback.

    When the env has no entry of its own and ``default`` is used, a note goes to stderr naming
    the envs that do have entries.

    :param table: The loaded hyperparameter table.
    :param env_id: The gymnasium env id.
    :param is_atari: Whether the env is an Atari env (rl-zoo3's ``ExperimentManager.is_atari``).
    :param source: The file, for messages.
    :return: The key of the entry used.
    :raises HyperparamsError: if there is neither an entry for the env nor a fallback for it.
    """
    if env_id in table:
        return env_id
    listed = ", ".join(env_entries(table)) or "none"
    if is_atari:
        if ATARI_KEY in table:
            return ATARI_KEY
        raise HyperparamsError(
            f"{env_id} is an Atari env, but {source} has neither an entry for it nor an '{ATARI_KEY}' entry "
            f"(the one every Atari env without its own entry gets). Envs with entries: {listed}. "
            f"Add an entry named '{env_id}' or '{ATARI_KEY}' and pass the file with --conf-file."
        )
    if DEFAULT_KEY in table:
        print(
            f"Note: {env_id} has no entry in {source}; envs with entries: {listed}"
            f"{f' (and {ATARI_KEY!r} for Atari envs)' if ATARI_KEY in table else ''}. "
            f"Using the '{DEFAULT_KEY}' entry ({_brief(table[DEFAULT_KEY])}), which every non-Atari env without "
            f"its own entry gets; its values are not tuned for {env_id}. "
            f"To tune, copy the file, add an entry named '{env_id}' and pass the copy with --conf-file, "
            f"or override single values with -params key:value.",
            file=sys.stderr,
        )
        return DEFAULT_KEY
    raise HyperparamsError(
        f"{source} has no entry for {env_id}. Envs with entries: {listed}. "
        f"Add an entry named '{env_id}', or one named '{DEFAULT_KEY}' (used for every non-Atari env without its own "
        f"entry; it must set at least n_timesteps and policy), and pass the file with --conf-file."
    )


def constructor_parameters(algorithm: type) -> frozenset[str]:
    """
    Every keyword an algorithm's constructor accepts: its ``inspect.signature``, which for this
    package's algorithms lists the SB3 parent's parameters and the replay knobs
    (:func:`~sb3_complementary.common.signature.combined_signature`). Private parameters
    (``_init_setup_model``) are left out.

    :param algorithm: The algorithm class.
    :return: The accepted keyword names.
    """
    return frozenset(
        p.name
        for p in inspect.signature(algorithm).parameters.values()
        if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and not p.name.startswith("_")
    )


def check_keys(algorithm: type, entry: Mapping[str, Any], where: str) -> None:
    """
    Refuse keys the algorithm's constructor would not accept.

    Valid keys are the constructor's parameters (:func:`constructor_parameters`) and the keys
    rl-zoo3 consumes itself (:data:`ZOO_EXPERIMENT_KEYS`); the parameters rl-zoo3 passes from
    the command line (:data:`ZOO_RESERVED_KEYS`) are refused with the flag to use instead.

    :param algorithm: The algorithm class.
    :param entry: The hyperparameters to check.
    :param where: Where they come from, for the message (e.g. ``"entry 'CartPole-v1' of my.yml"``).
    :raises HyperparamsError: naming every unknown key, with the closest valid spellings.
    """
    reserved = sorted(key for key in entry if key in ZOO_RESERVED_KEYS)
    if reserved:
        flags = ", ".join(f"{key} (use {ZOO_RESERVED_KEYS[key]})" for key in reserved)
        raise HyperparamsError(f"{where}: rl-zoo3 sets these from the command line, remove them: {flags}")
    valid = (constructor_parameters(algorithm) - ZOO_RESERVED_KEYS.keys()) | ZOO_EXPERIMENT_KEYS
    unknown = sorted(str(key) for key in entry if key not in valid)
    if not unknown:
        return
    hints = []
    for key in unknown:
        close = difflib.get_close_matches(key, sorted(valid), n=2, cutoff=0.8)
        hints.append(f"{key!r}" + (f" (did you mean {' or '.join(repr(c) for c in close)}?)" if close else ""))
    raise HyperparamsError(
        f"{where}: unknown hyperparameter{'s' if len(unknown) > 1 else ''} for {algorithm.__name__}: "
        f"{', '.join(hints)}. Valid keys are {algorithm.__name__}'s constructor parameters and rl-zoo3's "
        f"experiment keys ({', '.join(sorted(ZOO_EXPERIMENT_KEYS))})."
    )


def _brief(entry: Mapping[str, Any]) -> str:
    shown = [f"{key}={entry[key]!r}" for key in ("n_timesteps", "policy") if key in entry]
    others = len(entry) - len(shown)
    if others:
        shown.append(f"{others} other setting{'s' if others > 1 else ''}")
    return ", ".join(shown) or "empty"
