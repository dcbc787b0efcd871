"""SAC's entropy coefficient as SB3's SAC and sb3-contrib's TQC and CrossQ read it (for the TD-target helpers)."""

from typing import Any

import torch as th


def current_ent_coef(model: Any) -> th.Tensor:
    """
    This step's coefficient, detached: ``exp(log α)`` when learned (``ent_coef="auto"``), else the fixed one.

    The train steps read it inline, as their parents do; the ``_td_target`` helpers (the draw-time
    ``|TD|`` measurement) read it here, identically.

    :param model: A SAC, TQC or CrossQ model.
    """
    if model.log_ent_coef is not None:
        return th.exp(model.log_ent_coef.detach())
    return model.ent_coef_tensor
