"""
The experience extractor's settings: ``extractor_kwargs`` completed with the defaults and checked once.

The algorithm calls :func:`extractor_settings` when it is built (and when a saved model is
loaded); everything downstream reads the completed dict.
"""

from typing import Any

from sb3_complementary.common.extractor import HOLDOUT_MODULUS
from sb3_complementary.common.validation import check_range

#: The smallest fast memory, twice the held-out period: it always holds held-out and trainable transitions.
MIN_FAST_MEMORY = 2 * HOLDOUT_MODULUS
#: The fast memory of a buffer of 10,000 transitions or more.
DEFAULT_FAST_MEMORY = 2000
#: A smaller buffer's fast memory is ``buffer_size // FAST_MEMORY_DIVISOR``: 2,000 of 10,000.
FAST_MEMORY_DIVISOR = 5

#: Every key of ``extractor_kwargs`` and its default.
EXTRACTOR_DEFAULTS: dict[str, Any] = {
    "net_arch": [64, 64],
    "lr_ratio": 0.25,
    "train_freq": 500,
    "gradient_steps": 64,
    "batch_size": 256,
    "refresh_interval": 1000,
    "fast_memory": None,
    "temperature": 1.5,
    "cap": 10.0,
    "is_exponent": 0.0,
}


def extractor_settings(extractor_kwargs: dict[str, Any] | None, buffer_size: int) -> dict[str, Any]:
    """
    ``extractor_kwargs`` completed with the defaults and checked: each bad value raises a
    ``ValueError`` naming the key, its allowed range and the value.

    Keys (all optional):

    - ``net_arch`` (``[64, 64]``): hidden layers of the MLP, a non-empty list of positive sizes;
    - ``lr_ratio`` (0.25): its Adam learning rate as a fraction of the policy's initial one, > 0;
    - ``train_freq`` (500): env steps between fits, >= 1 (the schedule of the
      :class:`~sb3_complementary.common.extractor.ExtractorTrainingCallback` that ``learn()`` adds);
    - ``gradient_steps`` (64): Adam steps per fit, >= 1;
    - ``batch_size`` (256): transitions per step, half fast and half slow, >= 2;
    - ``refresh_interval`` (1000): env steps between re-scores of the whole buffer, >= 1;
    - ``fast_memory``: the freshest transitions that form the fast memory, in
      ``[16, buffer_size // 2]`` (the classifier fits once the buffer holds twice as many).
      Default: 2,000, or a fifth of a buffer smaller than 10,000, at least 16;
    - ``temperature`` (1.5): the ratio enters as ``ratio ** (1 / temperature)``, > 0;
    - ``cap`` (10): the largest self-normalised weight, >= 1;
    - ``is_exponent`` (0): the IS exponent of the ratio's draws, in [0, 1], fixed: 0 keeps the
      shift toward the current agent's data (the point of the ratio), 1 undoes it.

    :param extractor_kwargs: The user's dict (None: every default). It is read, never written.
    :param buffer_size: The replay buffer's size, which bounds the fast memory.
    :return: A new dict with every key.
    """
    given = dict(extractor_kwargs or {})
    unknown = sorted(set(given) - set(EXTRACTOR_DEFAULTS))
    if unknown:
        raise ValueError(f"extractor_kwargs: unknown keys {unknown}; the keys are {sorted(EXTRACTOR_DEFAULTS)}")
    settings = {**EXTRACTOR_DEFAULTS, **given}
    net_arch = list(settings["net_arch"])
    if not net_arch or any(int(w) != w or w < 1 for w in net_arch):
        raise ValueError(
            f"extractor_kwargs['net_arch'] must be a non-empty list of positive layer sizes, got {net_arch!r}"
        )
    settings["net_arch"] = [int(w) for w in net_arch]
    check_range("extractor_kwargs['lr_ratio']", settings["lr_ratio"], low=0.0, low_open=True)
    for key, low in (("train_freq", 1), ("gradient_steps", 1), ("batch_size", 2), ("refresh_interval", 1)):
        check_range(f"extractor_kwargs[{key!r}]", settings[key], low=low)
        if int(settings[key]) != settings[key]:
            raise ValueError(f"extractor_kwargs[{key!r}] must be a whole number >= {low}, got {settings[key]!r}")
        settings[key] = int(settings[key])
    check_range("extractor_kwargs['temperature']", settings["temperature"], low=0.0, low_open=True)
    check_range("extractor_kwargs['cap']", settings["cap"], low=1.0)
    check_range("extractor_kwargs['is_exponent']", settings["is_exponent"], low=0.0, high=1.0)
    if settings["fast_memory"] is None:
        settings["fast_memory"] = min(DEFAULT_FAST_MEMORY, max(MIN_FAST_MEMORY, buffer_size // FAST_MEMORY_DIVISOR))
    else:
        check_range(
            "extractor_kwargs['fast_memory']", settings["fast_memory"], low=MIN_FAST_MEMORY, high=buffer_size // 2
        )
    settings["fast_memory"] = int(settings["fast_memory"])
    return settings
