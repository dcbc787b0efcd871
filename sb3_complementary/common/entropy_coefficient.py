"""SAC's entropy coefficient, read and updated as SB3's SAC and sb3-contrib's TQC and CrossQ do it."""

from typing import Any

import torch as th


def current_ent_coef(model: Any) -> th.Tensor:
    """
    This step's coefficient, detached: ``exp(log α)`` when learned (``ent_coef="auto"``), else the fixed one.

    :param model: A SAC, TQC or CrossQ model.
    """
    if model.log_ent_coef is not None:
        return th.exp(model.log_ent_coef.detach())
    return model.ent_coef_tensor


def update_ent_coef(model: Any, log_prob: th.Tensor) -> float | None:
    """
    One optimiser step on ``-log α · (log π(a|s) + target_entropy)`` when α is learned. The replay's
    IS weights never reach this loss: they correct the value *target* distribution, which only the
    critic regresses.

    :param model: A SAC, TQC or CrossQ model.
    :param log_prob: ``(B, 1)`` log-probabilities of the actor's actions on the batch.
    :return: The loss value, or ``None`` when the coefficient is fixed.
    """
    if model.ent_coef_optimizer is None or model.log_ent_coef is None:
        return None
    loss = -(model.log_ent_coef * (log_prob + model.target_entropy).detach()).mean()
    model.ent_coef_optimizer.zero_grad()
    loss.backward()
    model.ent_coef_optimizer.step()
    return loss.item()
