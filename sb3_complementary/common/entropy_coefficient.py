"""SAC's entropy coefficient, read and updated as SB3's SAC and sb3-contrib's TQC and CrossQ do it."""

import torch as th


class EntropyCoefficientMixin:
    """
    The entropy-coefficient part of the maximum-entropy train steps (SAC, TQC, CrossQ), written
    once for their weighted ``train()``. The replay's IS weights never reach this loss: they
    correct the value *target* distribution, which only the critic regresses.
    """

    log_ent_coef: th.Tensor | None
    ent_coef_tensor: th.Tensor
    ent_coef_optimizer: th.optim.Adam | None
    target_entropy: str | float

    def _current_ent_coef(self) -> th.Tensor:
        """This step's coefficient, detached: ``exp(log α)`` when learned (``ent_coef="auto"``), else the fixed one."""
        if self.log_ent_coef is not None:
            return th.exp(self.log_ent_coef.detach())
        return self.ent_coef_tensor

    def _update_ent_coef(self, log_prob: th.Tensor) -> float | None:
        """
        One optimiser step on ``-log α · (log π(a|s) + target_entropy)`` when α is learned.

        :param log_prob: ``(B, 1)`` log-probabilities of the actor's actions on the batch.
        :return: The loss value, or ``None`` when the coefficient is fixed.
        """
        if self.ent_coef_optimizer is None or self.log_ent_coef is None:
            return None
        loss = -(self.log_ent_coef * (log_prob + self.target_entropy).detach()).mean()  # type: ignore[operator]
        self.ent_coef_optimizer.zero_grad()
        loss.backward()
        self.ent_coef_optimizer.step()
        return loss.item()
