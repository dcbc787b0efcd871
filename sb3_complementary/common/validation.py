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


def check_replay_knobs(
    alpha: float, epsilon: float, uniform_fraction: float, score_floor: float, beta: float | None = None
) -> None:
    """
    Check the knobs of a weighted replay (the algorithm's and its buffer's are the same knobs).

    :raises ValueError: For a value out of its range, or ``epsilon = score_floor = 0`` with a
        scored share (a transition whose score reached 0 could never be drawn again).
    """
    check_range("alpha", alpha, low=0.0)
    if beta is not None:
        check_range("beta", beta, low=0.0, high=1.0)
    check_range("epsilon", epsilon, low=0.0)
    check_range("uniform_fraction", uniform_fraction, low=0.0, high=1.0)
    check_range("score_floor", score_floor, low=0.0)
    if epsilon == 0 and score_floor == 0 and uniform_fraction < 1:
        raise ValueError("epsilon and score_floor cannot both be 0: a transition could never be sampled again")
