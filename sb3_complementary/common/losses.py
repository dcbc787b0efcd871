"""
Per-sample critic losses with importance-sampling weights.

Every function here mirrors the loss its SB3 / sb3-contrib algorithm computes, with the same
tensor operations in the same order, so that with all weights equal to 1 a weighted algorithm
trains bit for bit like its parent.
"""

import torch as th
from torch.nn import functional as F


def weighted_mse(current: th.Tensor, target: th.Tensor, weights: th.Tensor) -> th.Tensor:
    """
    ``mean_i w_i (current_i - target_i)²``: SB3's ``F.mse_loss(current, target)`` with per-sample weights.

    With every weight 1 it equals ``F.mse_loss`` bit for bit, forward and backward.

    :param current: ``(B, 1)`` Q-values of one critic.
    :param target: ``(B, 1)`` TD targets.
    :param weights: ``(B, 1)`` IS weights.
    """
    return (weights * F.mse_loss(current, target, reduction="none")).mean()


def _cum_prob(n_quantiles: int, like: th.Tensor) -> th.Tensor:
    """Quantile midpoints ``τ_k = (k + 0.5) / K``, computed exactly as sb3-contrib does."""
    return (th.arange(n_quantiles, device=like.device, dtype=th.float) + 0.5) / n_quantiles


def quantile_huber_elementwise(current_quantiles: th.Tensor, target_quantiles: th.Tensor) -> th.Tensor:
    """
    The unreduced quantile Huber loss ``ρ_τk(δ_kj) = |τ_k - 1{δ_kj < 0}| · H(δ_kj)``, ``δ_kj = T_j - θ_k``.

    The same operations as sb3-contrib's ``quantile_huber_loss`` before its reduction.

    :param current_quantiles: ``(B, K)`` (QR-DQN) or ``(B, n_critics, K)`` (TQC) current quantiles ``θ``.
    :param target_quantiles: ``(B, N')`` or ``(B, 1, N')`` target quantiles ``T``.
    :return: ``(B, K, N')`` or ``(B, n_critics, K, N')``.
    """
    n_quantiles = current_quantiles.shape[-1]
    cum_prob = _cum_prob(n_quantiles, current_quantiles)
    cum_prob = cum_prob.view(1, -1, 1) if current_quantiles.ndim == 2 else cum_prob.view(1, 1, -1, 1)
    pairwise_delta = target_quantiles.unsqueeze(-2) - current_quantiles.unsqueeze(-1)
    abs_pairwise_delta = th.abs(pairwise_delta)
    huber_loss = th.where(abs_pairwise_delta > 1, abs_pairwise_delta - 0.5, pairwise_delta**2 * 0.5)
    return th.abs(cum_prob - (pairwise_delta.detach() < 0).float()) * huber_loss


def weighted_quantile_huber_loss(
    current_quantiles: th.Tensor,
    target_quantiles: th.Tensor,
    weights: th.Tensor,
    sum_over_quantiles: bool = True,
) -> th.Tensor:
    """
    sb3-contrib's ``quantile_huber_loss`` with each sample's share multiplied by its IS weight.

    QR-DQN sums over the current-quantile axis and averages the rest (``sum_over_quantiles=True``);
    TQC averages everything. Either way the batch loss is the mean over samples of a per-sample
    loss, and with every weight 1 the result (and its gradient) is bit for bit the parent's.

    :param current_quantiles: ``(B, K)`` or ``(B, n_critics, K)``.
    :param target_quantiles: ``(B, N')`` or ``(B, 1, N')``.
    :param weights: ``(B, 1)`` IS weights.
    :param sum_over_quantiles: As in sb3-contrib.
    """
    loss = quantile_huber_elementwise(current_quantiles, target_quantiles)
    if sum_over_quantiles:
        loss = loss.sum(dim=-2)
    return (weights.reshape(-1, *([1] * (loss.ndim - 1))) * loss).mean()


def quantile_td_abs(current_quantiles: th.Tensor, target_quantiles: th.Tensor) -> th.Tensor:
    """
    ``|mean_j T_j - mean_k θ_k|``: the TD error of the Q-value a quantile critic implies.

    :param current_quantiles: ``(B, K)``.
    :param target_quantiles: ``(B, N')``.
    :return: ``(B,)``.
    """
    return (target_quantiles.mean(dim=-1) - current_quantiles.mean(dim=-1)).abs()
