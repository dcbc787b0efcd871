"""
What the density-ratio extractor learns: the fast (recent) memory against the slow (whole) memory.

The extractor is a classifier ``c(x) = P(x comes from the fast memory)``, trained on balanced
batches: half from the ``fast_memory`` freshest transitions (label 1), half drawn uniformly from
the whole buffer (label 0). With balanced classes its odds estimate the density ratio
``d_fast(x) / d_slow(x) = c / (1 - c) = exp(logit)``: how much a stored transition looks like what
the agent does now. The labels are free and exact, and they move with the policy, because the
fast memory does (likelihood-free importance weights, Sinha et al., L4DC 2022).

The ratio is tempered (``w ** (1 / T)``), self-normalised to mean 1 over the buffer and capped;
the replay mixes it with a uniform share (see ``sampling_probabilities`` of the buffer).

A fixed slice of the buffer (a transition at row ``r`` of env ``e`` with ``(r + e) % HOLDOUT_MODULUS
== 0``: one row in eight of every env, and one env in eight of every row) is never trained on: the
classifier's ROC AUC on it is the held-out evidence that the extractor learns something. A fast
memory of at least :data:`MIN_FAST_MEMORY` transitions always holds some of it.
"""

import warnings

import numpy as np
import torch as th
from torch.nn import functional as F

from sb3_complementary.common.buffers import ComplementaryReplayBuffer
from sb3_complementary.common.extractor import MIN_FAST_MEMORY, ExperienceExtractor
from sb3_complementary.common.roc_auc import roc_auc

#: Transitions at row ``r`` of env ``e`` with ``(r + e) % HOLDOUT_MODULUS == 0`` are held out of every fit.
HOLDOUT_MODULUS = 8
# The smallest fast memory (extractor.MIN_FAST_MEMORY) is twice the held-out period: it holds held-out and
# trainable transitions.
assert MIN_FAST_MEMORY == 2 * HOLDOUT_MODULUS
__all__ = ["MIN_FAST_MEMORY", "fit_classifier", "fit_ready", "held_out", "held_out_auc", "ratio_weights"]
#: Held-out transitions drawn from the slow memory to measure the ROC AUC.
AUC_SAMPLE = 2048


def held_out(indices: np.ndarray, n_envs: int) -> np.ndarray:
    """
    ``(n,)`` True where a flat index ``row * n_envs + env`` belongs to the held-out slice.

    The slice is ``(row + env) % HOLDOUT_MODULUS == 0``, not ``index % HOLDOUT_MODULUS``: with an
    even ``n_envs`` the latter would hold out env 0 only (and never train on it with 8 or 16 envs).
    With one env both are the same slice.
    """
    rows, envs = np.divmod(indices, n_envs)
    return (rows + envs) % HOLDOUT_MODULUS == 0


def fit_ready(buffer: ComplementaryReplayBuffer, fast_memory: int) -> bool:
    """Whether the buffer holds at least twice the fast memory: before that, fast and slow are nearly the same data."""
    return buffer.n_valid() >= 2 * fast_memory


def _slice(pool: np.ndarray, held: bool, n_envs: int) -> np.ndarray:
    """The held-out (``held``) or the trainable part of some flat indices."""
    return pool[held_out(pool, n_envs) == held]


def _draw(pool: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    return pool[rng.integers(0, len(pool), size=n)]


def fit_classifier(
    extractor: ExperienceExtractor,
    buffer: ComplementaryReplayBuffer,
    fast_memory: int,
    gradient_steps: int,
    batch_size: int,
    rng: np.random.Generator,
) -> float:
    """
    Take ``gradient_steps`` balanced BCE steps of fast (label 1) against slow (label 0).

    :param extractor: The classifier; its normaliser is updated on every batch.
    :param buffer: The replay buffer (the slow memory); its ``fast_memory`` freshest transitions are the fast one.
    :param fast_memory: Size of the fast memory, in transitions.
    :param gradient_steps: Adam steps.
    :param batch_size: Transitions per step (half fast, half slow).
    :param rng: The model's replay RNG (never NumPy's global one, which SB3's sampling uses).
    :return: The mean loss over the steps.
    """
    # Filtered once per fit, not per step: the slow pool is the whole buffer.
    fast_pool = _slice(buffer.recent_indices(fast_memory), held=False, n_envs=buffer.n_envs)
    slow_pool = _slice(buffer.valid_indices(), held=False, n_envs=buffer.n_envs)
    n_fast = batch_size // 2
    labels = th.cat([th.ones(n_fast), th.zeros(batch_size - n_fast)]).to(extractor.device)
    losses = []
    for _ in range(gradient_steps):
        indices = np.concatenate(
            [
                _draw(fast_pool, n_fast, rng),
                _draw(slow_pool, batch_size - n_fast, rng),
            ]
        )
        x = th.as_tensor(buffer.ratio_inputs(indices), device=extractor.device)
        extractor.normalizer.update(x)
        loss = F.binary_cross_entropy_with_logits(extractor.logits(x), labels)
        extractor.optimizer.zero_grad()
        loss.backward()
        extractor.optimizer.step()
        losses.append(loss.item())
    return float(np.mean(losses))


@th.no_grad()
def held_out_auc(
    extractor: ExperienceExtractor,
    buffer: ComplementaryReplayBuffer,
    fast_memory: int,
    rng: np.random.Generator,
) -> float:
    """
    ROC AUC of the classifier on held-out transitions: every held-out one of the fast memory
    against :data:`AUC_SAMPLE` held-out ones of the whole buffer. 0.5 = it cannot tell them apart.
    """
    fast = _slice(buffer.recent_indices(fast_memory), held=True, n_envs=buffer.n_envs)
    slow = _draw(_slice(buffer.valid_indices(), held=True, n_envs=buffer.n_envs), AUC_SAMPLE, rng)
    indices = np.concatenate([fast, slow])
    logits = extractor.logits(th.as_tensor(buffer.ratio_inputs(indices), device=extractor.device))
    labels = np.concatenate([np.ones(len(fast)), np.zeros(len(slow))])
    return roc_auc(labels, logits.cpu().numpy())


def ratio_weights(logits: np.ndarray, temperature: float, cap: float) -> np.ndarray:
    """
    Tempered, self-normalised, capped density ratios from the classifier's logits.

    ``w = exp(logit / T)`` (the ratio ``c / (1 - c)`` to the power ``1 / T``), divided by its
    mean over ``logits``, then clipped to ``cap``. A non-finite logit gets weight 1 (uniform)
    with a warning: a broken classifier output never starves or floods a transition.

    :param logits: ``(n,)`` classifier logits of the transitions being weighted (the whole buffer).
    :param temperature: ``T > 0``; larger is flatter.
    :param cap: Largest weight, ``>= 1``.
    :return: ``(n,)`` float32 weights, mean 1 before the cap.
    """
    logits = np.asarray(logits, dtype=np.float64).reshape(-1)
    finite = np.isfinite(logits)
    if not finite.all():
        warnings.warn(
            f"{int((~finite).sum())} non-finite extractor outputs: those transitions get the uniform weight",
            RuntimeWarning,
            stacklevel=2,
        )
    weights = np.ones_like(logits)
    if finite.any():
        scaled = logits[finite] / temperature
        tempered = np.exp(scaled - scaled.max())  # shift: the mean normalisation cancels it
        weights[finite] = tempered / tempered.mean()
    return np.minimum(weights, cap).astype(np.float32)
