"""The constructor signature of a weighted-replay algorithm: its SB3 parent's parameters, then the replay knobs."""

import inspect
from typing import Any

from stable_baselines3.common.base_class import BaseAlgorithm

#: Where the parent algorithms live.
SB3_PACKAGES = ("stable_baselines3", "sb3_contrib")
#: SB3's private constructor flag: shown last.
SETUP = "_init_setup_model"


def combined_signature(cls: type) -> inspect.Signature | None:
    """
    What ``inspect.signature(cls)`` should show for ``class X(SomeMixin, WeightedY)``.

    The mixins' constructors take ``(*args, <knobs>, **kwargs)`` and forward the rest to the SB3
    parent, which hides the parent's parameters from ``inspect.signature``, ``help()`` and tools
    built on them. This lists the parent's parameters (the first SB3 class in the MRO: ``DQN``,
    ``SAC``, ...) in order, then every mixin knob as keyword-only, each parameter once.

    :param cls: An algorithm class.
    :return: The signature, without ``self``; None for a mixin with no SB3 parent in its MRO.
    """
    parent = next((c for c in cls.__mro__ if c.__module__.startswith(SB3_PACKAGES)), None)
    if parent is None or not issubclass(parent, BaseAlgorithm):
        return None
    params = [p for p in inspect.signature(parent.__init__).parameters.values() if p.name != "self"]
    setup = next((p for p in params if p.name == SETUP), None)
    params = [p for p in params if p.name != SETUP]
    seen = {p.name for p in params} | {SETUP}
    knobs: list[inspect.Parameter] = []
    for klass in cls.__mro__:
        if klass is parent:
            break
        init: Any = klass.__dict__.get("__init__")
        if init is None:
            continue
        for p in inspect.signature(init).parameters.values():
            if p.kind is p.KEYWORD_ONLY and p.name not in seen:
                knobs.append(p)
                seen.add(p.name)
    if setup is not None:
        knobs.append(setup.replace(kind=inspect.Parameter.KEYWORD_ONLY))
    return inspect.Signature([*params, *knobs], return_annotation=None)
