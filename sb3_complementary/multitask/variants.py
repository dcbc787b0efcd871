"""
Named families of task variants, built from real environment parameters.

A *family* is one gymnasium environment and a fixed, ordered list of *variants* of it, each a
set of physical parameters (CartPole's pole length, LunarLander's gravity and wind, ...).
Variants have stable integer ids (their position in the family) and stable names, so a
multi-task evaluation set never drifts between runs or releases (docs/design.md, "Pitfalls and their guards": keep the
evaluation tasks fixed). Users add their own families with :func:`register_family`.

Parameters are applied in one of two ways, whichever the environment supports:

- ``"kwarg"``: passed to ``gym.make`` (LunarLander's ``gravity``, ``enable_wind``, ``wind_power``,
  ``turbulence_power`` are constructor arguments of gymnasium's own env);
- ``"attribute"``: set on ``env.unwrapped`` after ``gym.make`` (CartPole's and MountainCar's
  physical constants are plain attributes read by ``step``). A family may name a function that
  then recomputes derived constants (CartPole caches ``total_mass`` and ``polemass_length``).

Every value is range-checked when the family is built, so a bad variant fails at registration
with a ``ValueError`` naming the parameter, rather than as a silently broken simulation.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import gymnasium as gym

#: Allowed spelling of family and variant names (they appear in logs, tables and file names).
_NAME_RE = re.compile(r"^[a-z][a-z0-9_]*$")


@dataclass(frozen=True)
class ParamSpec:
    """
    How one environment parameter is validated and applied.

    :param how: ``"kwarg"`` (passed to ``gym.make``) or ``"attribute"`` (set on ``env.unwrapped``).
    :param kind: ``"float"`` (any real number, bools refused) or ``"bool"``.
    :param low: Lower bound (None: unbounded).
    :param high: Upper bound (None: unbounded).
    :param low_open: Exclude ``low`` itself.
    :param high_open: Exclude ``high`` itself.
    :param source: Where the range comes from (shown in the error message).
    """

    how: Literal["kwarg", "attribute"] = "attribute"
    kind: Literal["float", "bool"] = "float"
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    source: str = ""

    def allowed(self) -> str:
        """:return: The allowed range as text, e.g. ``"(-12.0, 0.0)"``."""
        if self.kind == "bool":
            return "{True, False}"
        left = "(" if self.low_open or self.low is None else "["
        right = ")" if self.high_open or self.high is None else "]"
        return f"{left}{'-inf' if self.low is None else self.low}, {'inf' if self.high is None else self.high}{right}"

    def check(self, name: str, value: Any, where: str) -> None:
        """
        Raise ``ValueError`` (naming ``name``, the range and the value) unless ``value`` is allowed.

        :param name: Parameter name.
        :param value: Given value.
        :param where: Family and variant, for the message.
        """
        why = f" ({self.source})" if self.source else ""
        if self.kind == "bool":
            if not isinstance(value, bool):
                raise ValueError(f"{where}: parameter {name} must be a bool, got {value!r}")
            return
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise ValueError(
                f"{where}: parameter {name} must be a finite number in {self.allowed()}{why}, got {value!r}"
            )
        too_low = self.low is not None and (value <= self.low if self.low_open else value < self.low)
        too_high = self.high is not None and (value >= self.high if self.high_open else value > self.high)
        if too_low or too_high:
            raise ValueError(f"{where}: parameter {name} must be in {self.allowed()}{why}, got {value!r}")


@dataclass(frozen=True)
class TaskVariant:
    """
    One task of a family.

    :param task_id: Stable id: the variant's position in its family (what ``info["task_id"]`` reports).
    :param name: Stable name, e.g. ``"short_pole"``.
    :param params: ``(parameter, value)`` pairs, in the order they are applied.
    """

    task_id: int
    name: str
    params: tuple[tuple[str, Any], ...] = ()

    @property
    def kwargs(self) -> dict[str, Any]:
        """:return: The parameters as a dict."""
        return dict(self.params)

    def describe(self) -> str:
        """:return: ``"length=0.25, masspole=0.1"``: the parameters as text."""
        return ", ".join(f"{k}={v}" for k, v in self.params)


@dataclass(frozen=True)
class TaskFamily:
    """
    A gymnasium environment and a fixed, ordered list of its variants.

    Picklable (a module-level ``after_apply`` pickles by reference), so a family object can be
    handed to :class:`~sb3_complementary.multitask.MultiTaskEnv` inside a ``SubprocVecEnv``
    factory even when it was registered only in the parent process.

    :param name: Family name, e.g. ``"cartpole"``.
    :param env_id: Registered gymnasium id of the base environment.
    :param params: Every parameter a variant may set, with its range and how it is applied.
    :param variants: The variants; ``variants[k].task_id == k``.
    :param make_kwargs: Fixed ``gym.make`` kwargs of every variant (before the variant's own).
    :param after_apply: Called with ``env.unwrapped`` after the attributes are set (recomputes
        derived constants), or None.
    :param description: One line for tables and ``--help``.
    """

    name: str
    env_id: str
    params: dict[str, ParamSpec]
    variants: tuple[TaskVariant, ...]
    make_kwargs: dict[str, Any] = field(default_factory=dict)
    after_apply: Callable[[gym.Env], None] | None = None
    description: str = ""

    def __post_init__(self) -> None:
        if not _NAME_RE.match(self.name):
            raise ValueError(f"task family name {self.name!r} must match {_NAME_RE.pattern}")
        if not self.variants:
            raise ValueError(f"task family {self.name!r} needs at least one variant")
        names = [v.name for v in self.variants]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"task family {self.name!r}: duplicate variant name(s) {duplicates}")
        for position, variant in enumerate(self.variants):
            where = f"task family {self.name!r}, variant {variant.name!r}"
            if variant.task_id != position:
                raise ValueError(f"{where}: task_id {variant.task_id} must equal its position {position}")
            if not _NAME_RE.match(variant.name):
                raise ValueError(f"{where}: variant name must match {_NAME_RE.pattern}")
            for key, value in variant.params:
                if key not in self.params:
                    raise ValueError(f"{where}: unknown parameter {key!r}; valid parameters: {sorted(self.params)}")
                self.params[key].check(key, value, where)

    def __len__(self) -> int:
        return len(self.variants)

    @property
    def names(self) -> list[str]:
        """:return: Variant names, in id order."""
        return [v.name for v in self.variants]

    def variant(self, key: int | str) -> TaskVariant:
        """
        Look a variant up by id or name.

        :param key: Task id (``int``) or variant name.
        :return: The variant.
        :raises ValueError: listing the valid ids and names when there is no such variant.
        """
        if isinstance(key, str):
            for variant in self.variants:
                if variant.name == key:
                    return variant
        elif isinstance(key, int) and not isinstance(key, bool) and 0 <= key < len(self.variants):
            return self.variants[key]
        valid = ", ".join(f"{v.task_id}={v.name}" for v in self.variants)
        raise ValueError(f"unknown variant {key!r} of task family {self.name!r}; valid (id=name): {valid}")

    def make(self, key: int | str, **make_kwargs: Any) -> gym.Env:
        """
        Build one variant.

        :param key: Task id or variant name.
        :param make_kwargs: Extra ``gym.make`` kwargs (e.g. ``render_mode``); they may not set a variant parameter.
        :return: The environment, as ``gym.make`` returns it (TimeLimit included), with the variant applied.
        """
        variant = self.variant(key)
        clash = sorted(set(make_kwargs) & set(self.params))
        if clash:
            raise ValueError(f"task family {self.name!r}: {clash} are variant parameters; register a variant instead")
        kwargs = {**self.make_kwargs, **make_kwargs}
        attributes = {}
        for name, value in variant.params:
            if self.params[name].how == "kwarg":
                kwargs[name] = value
            else:
                attributes[name] = value
        env = gym.make(self.env_id, **kwargs)
        unwrapped = env.unwrapped
        for name, value in attributes.items():
            if not hasattr(unwrapped, name):
                env.close()
                raise ValueError(
                    f"task family {self.name!r}: {type(unwrapped).__name__} has no attribute {name!r} to set"
                )
            setattr(unwrapped, name, value)
        if self.after_apply is not None:
            self.after_apply(unwrapped)
        return env


# --------------------------------------------------------------------------- registry

_FAMILIES: dict[str, TaskFamily] = {}


def list_families() -> list[str]:
    """:return: Names of the registered families, sorted."""
    return sorted(_FAMILIES)


def get_family(family: str | TaskFamily) -> TaskFamily:
    """
    Resolve a family by name (a :class:`TaskFamily` is returned as is).

    :param family: Name or family.
    :return: The family.
    :raises ValueError: listing the registered families when the name is unknown.
    """
    if isinstance(family, TaskFamily):
        return family
    if isinstance(family, str) and family in _FAMILIES:
        return _FAMILIES[family]
    raise ValueError(f"unknown task family {family!r}; registered families: {list_families()}")


def register_family(
    name: str,
    variants: Mapping[str, Mapping[str, Any]],
    *,
    base: str | TaskFamily | None = None,
    env_id: str | None = None,
    params: Mapping[str, ParamSpec] | None = None,
    make_kwargs: Mapping[str, Any] | None = None,
    after_apply: Callable[[gym.Env], None] | None = None,
    description: str = "",
    overwrite: bool = False,
) -> TaskFamily:
    """
    Register a family of task variants.

    Either extend a registered family's environment (``base="cartpole"``: its env id, parameters,
    make kwargs and ``after_apply`` are reused) or describe a new one (``env_id`` and ``params``).
    Variant ids follow the order of ``variants``. Example::

        register_family("cartpole_gravity", {"moon": {"gravity": 1.62}, "earth": {"gravity": 9.8}}, base="cartpole")

    :param name: Family name (lower case, digits, ``_``).
    :param variants: Ordered mapping variant name → parameters.
    :param base: A registered family whose environment and parameters are reused.
    :param env_id: Registered gymnasium id (without ``base``).
    :param params: Parameter specifications (without ``base``; with it, they add to the base's).
    :param make_kwargs: Fixed ``gym.make`` kwargs of every variant.
    :param after_apply: Called with ``env.unwrapped`` after attribute parameters are set.
    :param description: One line of text.
    :param overwrite: Replace an existing family of the same name instead of refusing.
    :return: The registered family.
    :raises ValueError: on a name clash, an unknown parameter or an out-of-range value (naming it).
    """
    if name in _FAMILIES and not overwrite:
        raise ValueError(f"task family {name!r} is already registered (pass overwrite=True to replace it)")
    if base is not None:
        parent = get_family(base)
        if env_id is not None and env_id != parent.env_id:
            raise ValueError(f"register_family: env_id {env_id!r} contradicts base {parent.name!r} ({parent.env_id})")
        env_id = parent.env_id
        all_params = {**parent.params, **dict(params or {})}
        all_make_kwargs = {**parent.make_kwargs, **dict(make_kwargs or {})}
        after_apply = after_apply if after_apply is not None else parent.after_apply
    else:
        if env_id is None or params is None:
            raise ValueError("register_family needs either base=<family> or both env_id and params")
        all_params, all_make_kwargs = dict(params), dict(make_kwargs or {})
    if env_id not in gym.registry:
        raise ValueError(f"register_family: {env_id!r} is not a registered gymnasium environment id")
    family = TaskFamily(
        name=name,
        env_id=env_id,
        params=all_params,
        variants=tuple(
            TaskVariant(task_id, str(variant_name), tuple(dict(values).items()))
            for task_id, (variant_name, values) in enumerate(variants.items())
        ),
        make_kwargs=all_make_kwargs,
        after_apply=after_apply,
        description=description,
    )
    _FAMILIES[name] = family
    return family


# --------------------------------------------------------------------------- built-in families


def _cartpole_derived(env: gym.Env) -> None:
    """CartPole caches two products of its constants in ``__init__``: recompute them after a change."""
    unwrapped: Any = env
    unwrapped.total_mass = unwrapped.masspole + unwrapped.masscart
    unwrapped.polemass_length = unwrapped.masspole * unwrapped.length


_POSITIVE = ParamSpec(low=0.0, low_open=True, source="a physical quantity: must be positive")

#: Gymnasium's defaults for CartPole-v1: half pole length 0.5, pole mass 0.1, gravity 9.8, force 10.
CARTPOLE_DEFAULTS: dict[str, float] = {"length": 0.5, "masspole": 0.1, "gravity": 9.8, "force_mag": 10.0}

register_family(
    "cartpole",
    {
        "default": CARTPOLE_DEFAULTS,
        "short_pole": {**CARTPOLE_DEFAULTS, "length": 0.25},
        "heavy_pole": {**CARTPOLE_DEFAULTS, "masspole": 0.5},
        "high_gravity": {**CARTPOLE_DEFAULTS, "gravity": 15.0},
        "weak_force": {**CARTPOLE_DEFAULTS, "force_mag": 6.0},
    },
    env_id="CartPole-v1",
    params={
        "length": _POSITIVE,  # gymnasium's ``length`` is half the pole's length
        "masspole": _POSITIVE,
        "gravity": _POSITIVE,
        "force_mag": _POSITIVE,
    },
    after_apply=_cartpole_derived,
    description="CartPole-v1: pole (half) length, pole mass, gravity, push force",
)

register_family(
    "lunarlander",
    {
        "default": {"gravity": -10.0, "enable_wind": False},
        "low_gravity": {"gravity": -5.0, "enable_wind": False},
        "high_gravity": {"gravity": -11.5, "enable_wind": False},
        "windy": {"gravity": -10.0, "enable_wind": True, "wind_power": 10.0, "turbulence_power": 1.0},
        "stormy": {"gravity": -10.0, "enable_wind": True, "wind_power": 20.0, "turbulence_power": 2.0},
    },
    env_id="LunarLander-v3",
    params={
        # gymnasium asserts -12 < gravity < 0, and warns outside 0..20 (wind) and 0..2 (turbulence).
        "gravity": ParamSpec(
            how="kwarg", low=-12.0, high=0.0, low_open=True, high_open=True, source="gymnasium asserts it"
        ),
        "enable_wind": ParamSpec(how="kwarg", kind="bool"),
        "wind_power": ParamSpec(how="kwarg", low=0.0, high=20.0, source="gymnasium's documented range"),
        "turbulence_power": ParamSpec(how="kwarg", low=0.0, high=2.0, source="gymnasium's documented range"),
    },
    description="LunarLander-v3 (discrete): gravity, wind, turbulence (gymnasium's own make kwargs)",
)

register_family(
    "mountaincar",
    {
        "default": {"force": 0.001, "gravity": 0.0025},
        "strong_engine": {"force": 0.0015, "gravity": 0.0025},
        "weak_engine": {"force": 0.0008, "gravity": 0.0025},
        "low_gravity": {"force": 0.001, "gravity": 0.002},
        "high_gravity": {"force": 0.001, "gravity": 0.003},
    },
    env_id="MountainCar-v0",
    params={"force": _POSITIVE, "gravity": _POSITIVE},
    description="MountainCar-v0: engine force, gravity",
)
