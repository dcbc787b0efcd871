"""
Hyperparameters shared by every contender of a suite entry.

The protocol says all contenders run with identical hyperparameters, taken from the rl-zoo3
tuned entries of the parent algorithm (``hyperparams/dqn.yml`` of the installed ``rl_zoo3``
package for the DQN study, ``sac.yml`` for the SAC one). This module reads that file *without
importing* ``rl_zoo3`` (importing it registers many optional environments and is slow), strips
the keys that are not constructor arguments of the model, and parses zoo's Python-looking
strings such as ``"dict(net_arch=[256, 256])"`` with a tiny ``ast``-based parser instead of
``eval``. zoo's linear schedules (``learning_rate: lin_7.3e-4``) stay strings in the record and
become SB3's :class:`~stable_baselines3.common.utils.LinearSchedule` when the model is built.

A suite entry for which zoo has no tuned entry (the sparse-reward task) states its own
hyperparameters in the matrix YAML; they go through the same parsing and are applied to
every contender equally.
"""

from __future__ import annotations

import ast
import importlib.metadata
import importlib.util
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import yaml

#: Zoo keys that configure the experiment (env, wrappers, budget), not the model.
#: They are removed from the model kwargs and recorded under ``stripped``.
NON_MODEL_KEYS = frozenset(
    {
        "n_timesteps",
        "policy",
        "env_wrapper",
        "normalize",
        "normalize_kwargs",
        "frame_stack",
        "n_envs",
        "callback",
        "vec_env_wrapper",
        "env_kwargs",
        "eval_env_kwargs",
        "monitor_kwargs",
        "her_kwargs",
    }
)

#: Non-model keys that change the environment. The harness does not apply them, so an entry
#: that sets them is refused rather than silently run with a different environment than zoo's.
UNSUPPORTED_KEYS = frozenset({"env_wrapper", "normalize", "frame_stack", "vec_env_wrapper", "callback"})

#: Torch classes that may appear by name inside ``policy_kwargs`` strings (``activation_fn=nn.ReLU``).
#: They are kept as strings in the record (JSON-safe) and resolved only when the model is built.
TORCH_NAMES = {
    f"{prefix}{name}": f"torch.nn.{name}"
    for prefix in ("nn.", "th.nn.", "torch.nn.")
    for name in ("ReLU", "Tanh", "ELU", "LeakyReLU", "SiLU", "GELU", "Sigmoid")
} | {
    f"{prefix}{name}": f"torch.optim.{name}"
    for prefix in ("optim.", "th.optim.", "torch.optim.")
    for name in ("Adam", "AdamW", "RMSprop", "SGD")
}

#: Keys whose values are torch class names after parsing.
_CLASS_KEYS = ("activation_fn", "optimizer_class")


@dataclass(frozen=True)
class Hyperparams:
    """
    Hyperparameters of one suite entry, identical for every contender.

    :param policy: SB3 policy name (e.g. ``"MlpPolicy"``).
    :param model_kwargs: Constructor kwargs of the model, JSON-safe: nested dicts, lists,
        numbers, strings. Torch classes are kept as dotted names (``"torch.nn.ReLU"``).
    :param stripped: The non-model keys removed from the source entry (recorded, not applied;
        ``n_timesteps`` is superseded by the suite entry budget).
    :param source: Where they come from, e.g. ``"rl_zoo3 2.9.2 hyperparams/dqn.yml [CartPole-v1]"``.
    """

    policy: str
    model_kwargs: dict[str, Any] = field(default_factory=dict)
    stripped: dict[str, Any] = field(default_factory=dict)
    source: str = ""

    def to_dict(self) -> dict[str, Any]:
        """:return: JSON-safe representation (stored in every run file)."""
        return {
            "policy": self.policy,
            "model_kwargs": self.model_kwargs,
            "stripped": self.stripped,
            "source": self.source,
        }


def parse_kwargs_string(text: str) -> Any:
    """
    Parse a zoo kwargs string such as ``"dict(net_arch=[256, 256], activation_fn=nn.ReLU)"``.

    Only literals, lists, tuples, dict displays, ``dict(key=value, ...)`` calls, unary minus
    and the whitelisted torch names of :data:`TORCH_NAMES` are accepted; anything else is
    refused, so a hyperparameter file can never execute code.

    :param text: The string found in the YAML file.
    :return: The parsed value (tuples become lists, torch names become dotted strings).
    :raises ValueError: if the string is not of that restricted form.
    """
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        raise ValueError(f"cannot parse kwargs string {text!r}: {exc.msg}") from exc
    return _convert(tree.body, text)


def _dotted_name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted_name(node.value)
        return None if base is None else f"{base}.{node.attr}"
    return None


def _convert(node: ast.expr, text: str) -> Any:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant):
        value = node.operand.value
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return -value
    if isinstance(node, (ast.List, ast.Tuple)):
        return [_convert(elt, text) for elt in node.elts]
    if isinstance(node, ast.Dict):
        result: dict[Any, Any] = {}
        for key_node, value_node in zip(node.keys, node.values, strict=True):
            if key_node is None:
                raise ValueError(f"cannot parse kwargs string {text!r}: '**' unpacking is not allowed")
            result[_convert(key_node, text)] = _convert(value_node, text)
        return result
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "dict" and not node.args:
        out: dict[str, Any] = {}
        for keyword in node.keywords:
            if keyword.arg is None:
                raise ValueError(f"cannot parse kwargs string {text!r}: '**' unpacking is not allowed")
            out[keyword.arg] = _convert(keyword.value, text)
        return out
    name = _dotted_name(node)
    if name is not None and name in TORCH_NAMES:
        return TORCH_NAMES[name]
    raise ValueError(
        f"cannot parse kwargs string {text!r}: only literals, dict(...), lists and the torch names "
        f"{sorted(set(TORCH_NAMES.values()))} are allowed (got {ast.dump(node)[:80]})"
    )


def build_hyperparams(raw: Mapping[str, Any], source: str) -> Hyperparams:
    """
    Turn a raw hyperparameter mapping (a zoo entry or an explicit YAML block) into :class:`Hyperparams`.

    :param raw: Mapping as loaded from YAML.
    :param source: Human-readable origin, used in records and error messages.
    :return: The parsed hyperparameters.
    :raises ValueError: on keys the harness cannot honour or on unparsable strings.
    """
    unsupported = sorted(UNSUPPORTED_KEYS & set(raw))
    if unsupported:
        raise ValueError(f"{source}: keys {unsupported} change the environment and are not supported by the harness")
    if int(raw.get("n_envs", 1)) != 1:
        raise ValueError(f"{source}: n_envs must be 1 (got {raw['n_envs']})")
    policy = raw.get("policy", "MlpPolicy")
    if not isinstance(policy, str):
        raise ValueError(f"{source}: policy must be a string, got {policy!r}")
    model_kwargs: dict[str, Any] = {}
    stripped: dict[str, Any] = {}
    for key, value in raw.items():
        if key in NON_MODEL_KEYS:
            if key != "policy":
                stripped[key] = value
            continue
        if key.endswith("_kwargs") and isinstance(value, str):
            value = parse_kwargs_string(value)
            if not isinstance(value, dict):
                raise ValueError(f"{source}: {key} must describe a dict, got {value!r}")
        elif isinstance(value, tuple):
            value = list(value)
        model_kwargs[str(key)] = value
    return Hyperparams(policy=policy, model_kwargs=model_kwargs, stripped=stripped, source=source)


def zoo_file(algo: str = "dqn") -> Path:
    """
    :param algo: zoo's algorithm name, the file's stem (``"dqn"``, ``"sac"``, ``"qrdqn"``, ...).
    :return: Path of ``hyperparams/<algo>.yml`` inside the installed ``rl_zoo3`` package.
    :raises ValueError: if ``rl_zoo3`` is not installed or has no such file.
    """
    spec = importlib.util.find_spec("rl_zoo3")
    if spec is None or not spec.submodule_search_locations:
        raise ValueError("rl_zoo3 is not installed; it provides the tuned hyperparameters (pip install rl_zoo3)")
    folder = Path(next(iter(spec.submodule_search_locations))) / "hyperparams"
    path = folder / f"{algo}.yml"
    if not path.is_file():
        known = sorted(p.stem for p in folder.glob("*.yml"))
        raise ValueError(f"rl-zoo3 has no hyperparameter file for algorithm {algo!r} (known: {known})")
    return path


@cache
def _zoo_table(algo: str) -> dict[str, Any]:
    path = zoo_file(algo)
    with open(path) as file:
        table = yaml.safe_load(file)
    if not isinstance(table, dict):
        raise ValueError(f"{path} is not a mapping")
    return table


def zoo_version() -> str:
    """:return: Installed ``rl_zoo3`` version (``"unknown"`` if the metadata is missing)."""
    try:
        return importlib.metadata.version("rl_zoo3")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def zoo_hyperparams(zoo_id: str, algo: str = "dqn") -> Hyperparams:
    """
    Tuned hyperparameters of rl-zoo3 for one environment and algorithm.

    :param zoo_id: Key in ``hyperparams/<algo>.yml`` (usually the gymnasium env id).
    :param algo: zoo's algorithm name (the file's stem).
    :return: The parsed hyperparameters.
    :raises ValueError: if zoo has no tuned ``algo`` entry for ``zoo_id``.
    """
    table = _zoo_table(algo)
    if zoo_id not in table or zoo_id in ("default", "atari"):
        known = sorted(k for k in table if k not in ("default", "atari"))
        raise ValueError(f"rl-zoo3 has no tuned {algo.upper()} hyperparameters for {zoo_id!r} (known: {known})")
    return build_hyperparams(table[zoo_id], source=f"rl_zoo3 {zoo_version()} hyperparams/{algo}.yml [{zoo_id}]")


def linear_schedule(text: str) -> Callable[[float], float]:
    """
    zoo's ``"lin_<x>"`` hyperparameter: ``x * progress_remaining`` (1 at the start of training, 0 at the end).

    :param text: The string, e.g. ``"lin_7.3e-4"``.
    :return: A picklable SB3 schedule.
    :raises ValueError: if ``<x>`` is not a number.
    """
    from stable_baselines3.common.utils import LinearSchedule

    try:
        start = float(text.removeprefix("lin_"))
    except ValueError as exc:
        raise ValueError(f"cannot parse linear schedule {text!r}: expected 'lin_<number>'") from exc
    return LinearSchedule(start=start, end=0.0, end_fraction=1.0)


def _resolve_class(dotted: str) -> Any:
    module_name, _, attr = dotted.rpartition(".")
    module = importlib.import_module(module_name)
    return getattr(module, attr)


def _replay_buffer_class(name: str) -> Any:
    """SB3's ``HerReplayBuffer`` by its bare name (as zoo files write it), any other class by dotted path."""
    from stable_baselines3 import HerReplayBuffer

    return HerReplayBuffer if name == "HerReplayBuffer" else _resolve_class(name)


def constructor_kwargs(hyperparams: Hyperparams) -> dict[str, Any]:
    """
    Model constructor kwargs with the JSON-safe placeholders resolved.

    Torch class names inside ``policy_kwargs`` become classes, ``train_freq`` given as a list
    (``[1, "episode"]``) becomes the tuple SB3 expects, ``replay_buffer_class`` (``"HerReplayBuffer"``,
    as in zoo files, or a dotted path) becomes the class, and zoo's ``"lin_<x>"`` strings become
    a schedule decaying linearly from ``x`` to 0 over training (zoo's ``linear_schedule``).

    :param hyperparams: Parsed hyperparameters.
    :return: A fresh dict, safe to mutate.
    """
    kwargs: dict[str, Any] = {}
    for key, value in hyperparams.model_kwargs.items():
        if key.endswith("_kwargs") and isinstance(value, dict):
            value = {
                k: _resolve_class(v) if k in _CLASS_KEYS and isinstance(v, str) and v in TORCH_NAMES.values() else v
                for k, v in value.items()
            }
        elif key == "train_freq" and isinstance(value, list):
            value = tuple(value)
        elif key == "replay_buffer_class" and isinstance(value, str):
            value = _replay_buffer_class(value)
        elif isinstance(value, str) and value.startswith("lin_"):
            value = linear_schedule(value)
        kwargs[key] = value
    return kwargs
