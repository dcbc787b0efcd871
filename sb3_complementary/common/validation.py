"""Knob validation: every bad value raises a ``ValueError`` naming the knob, its allowed range and the value."""

from collections.abc import Sequence
from typing import Any


def check_range(
    name: str,
    value: float,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
) -> None:
    """
    Raise ``ValueError`` unless ``low <= value <= high`` (``low < value`` when ``low_open``).

    :param name: Knob name, as the user spells it.
    :param value: Given value.
    :param low: Lower bound, or None.
    :param high: Upper bound, or None.
    :param low_open: Exclude ``low`` itself.
    """
    left = "(" if low_open else "["
    allowed = f"{left}{'-inf' if low is None else low}, {'inf' if high is None else high}]"
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number in {allowed}, got {value!r}") from None
    too_low = low is not None and (number <= low if low_open else number < low)
    too_high = high is not None and number > high
    if too_low or too_high or number != number:
        raise ValueError(f"{name} must be in {allowed}, got {value!r}")


def check_choice(name: str, value: Any, choices: Sequence[str]) -> None:
    """Raise ``ValueError`` unless ``value`` is one of ``choices``."""
    if value not in choices:
        raise ValueError(f"{name} must be one of {list(choices)}, got {value!r}")
