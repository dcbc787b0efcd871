"""
Seed sets of the benchmark: ``"0-9"``, ``"0-4,7"``, ``"3"`` or a list of ints (the matrix's ``seeds:``
and the ``--seeds`` flags).
"""

from __future__ import annotations

import re
from collections.abc import Sequence


def parse_seeds(spec: str | int | Sequence[int]) -> tuple[int, ...]:
    """
    Parse a seed set: ``"0-9"``, ``"0-4,7"``, ``"3"`` or a list of ints.

    :param spec: The specification.
    :return: Sorted, unique seeds.
    :raises ValueError: on a malformed specification.
    """
    seeds: set[int] = set()
    if isinstance(spec, bool):
        raise ValueError(f"malformed seeds {spec!r}")
    if isinstance(spec, int):
        seeds.add(spec)
    elif isinstance(spec, str):
        for part in spec.replace(" ", "").split(","):
            match = re.fullmatch(r"(\d+)(?:-(\d+))?", part)
            if match is None:
                raise ValueError(f"malformed seeds {spec!r}: expected e.g. '0-9' or '0-4,7'")
            low = int(match.group(1))
            high = int(match.group(2)) if match.group(2) is not None else low
            if high < low:
                raise ValueError(f"malformed seeds {spec!r}: empty range {part!r}")
            seeds.update(range(low, high + 1))
    elif isinstance(spec, Sequence) and all(isinstance(s, int) and not isinstance(s, bool) for s in spec):
        seeds.update(int(s) for s in spec)
    else:
        raise ValueError(f"malformed seeds {spec!r}: expected a list of ints or a string like '0-9'")
    if not seeds or min(seeds) < 0:
        raise ValueError(f"malformed seeds {spec!r}: need at least one non-negative seed")
    return tuple(sorted(seeds))
