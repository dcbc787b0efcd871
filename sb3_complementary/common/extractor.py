"""
The experience extractor: a classifier of the fast (recent) memory against the slow (whole) memory.

The extractor is a small MLP ``c(x) = P(x comes from the fast memory)``, trained on balanced
batches (:func:`~sb3_complementary.common.density_ratio.fit_classifier`). Its odds
``c / (1 - c) = exp(logit)`` estimate the density ratio ``d_fast(x) / d_slow(x)``: how much a
stored transition looks like what the agent does now. The replay turns the tempered,
self-normalised, capped ratio into each transition's score
(:func:`~sb3_complementary.common.density_ratio.ratio_weights`).

Its settings come from the algorithm's ``extractor_kwargs`` (:func:`extractor_settings`), checked
once, when the algorithm is built.
"""

from typing import Any

import numpy as np
import torch as th
from stable_baselines3.common.utils import get_device
from torch import nn

from sb3_complementary.common.validation import check_range

#: The smallest fast memory: it must hold held-out and trainable transitions (see density_ratio.HOLDOUT_MODULUS).
MIN_FAST_MEMORY = 16
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
    - ``train_freq`` (500): env steps between fits, >= 1;
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


class RunningNormalizer(nn.Module):
    """
    Running mean/variance of the extractor's inputs (parallel Welford update).

    SB3's ``RunningMeanStd`` does the same in NumPy; holding the statistics in registered
    buffers instead puts them in the extractor's ``state_dict``, so ``model.save``/``load``
    carry them with the weights without any extra pickling.

    :param n_features: Input width.
    :param clip: Normalised values are clipped to ``[-clip, clip]``.
    """

    mean: th.Tensor
    var: th.Tensor
    count: th.Tensor

    def __init__(self, n_features: int, clip: float = 5.0) -> None:
        super().__init__()
        self.clip = clip
        self.register_buffer("mean", th.zeros(n_features))
        self.register_buffer("var", th.ones(n_features))
        self.register_buffer("count", th.tensor(1e-4))

    @th.no_grad()
    def update(self, x: th.Tensor) -> None:
        """Fold a ``(n, n_features)`` batch into the statistics."""
        batch_mean = x.mean(dim=0)
        batch_var = x.var(dim=0, unbiased=False)
        batch_count = x.shape[0]
        delta = batch_mean - self.mean
        total = self.count + batch_count
        self.mean += delta * batch_count / total
        m2 = self.var * self.count + batch_var * batch_count + delta.pow(2) * self.count * batch_count / total
        self.var.copy_(m2 / total)
        self.count.copy_(total)

    def forward(self, x: th.Tensor) -> th.Tensor:
        return ((x - self.mean) / th.sqrt(self.var + 1e-8)).clamp(-self.clip, self.clip)


class ExperienceExtractor(nn.Module):
    """
    The fast/slow classifier: ``inputs → running normalisation → MLP → logit``.

    The logit is the log density ratio of a transition (fast memory against the whole buffer).
    The extractor has its own optimizer (``self.optimizer``): it never shares gradients with the
    actor, and its outputs are always detached from the actor's loss.

    The last layer is zero-initialised, so every transition starts at logit 0, a density ratio
    of 1 (fast and slow alike): a freshly built extractor cannot starve any data.

    :param n_features: Width of the input (``ratio_input_dim`` of the buffer).
    :param net_arch: Hidden layer sizes, e.g. ``[64, 64]``.
    :param learning_rate: Adam learning rate of the extractor.
    :param device: Torch device, resolved as SB3 resolves a model's (``"cuda"`` without CUDA is the CPU).
    """

    def __init__(
        self,
        n_features: int,
        net_arch: list[int],
        learning_rate: float,
        device: th.device | str = "cpu",
    ) -> None:
        super().__init__()
        self.normalizer = RunningNormalizer(n_features)
        layers: list[nn.Module] = []
        last = n_features
        for width in net_arch:
            layers += [nn.Linear(last, width), nn.ReLU()]
            last = width
        head = nn.Linear(last, 1)
        nn.init.zeros_(head.weight)
        nn.init.zeros_(head.bias)
        self.net = nn.Sequential(*layers, head)
        # As SB3 resolves a model's device: "auto" and "cuda" fall back to the CPU without CUDA.
        self.device = get_device(device)
        self.to(self.device)
        self.optimizer = th.optim.Adam(self.parameters(), lr=learning_rate)

    def logits(self, features: th.Tensor) -> th.Tensor:
        """``(n, n_features)`` → ``(n,)`` logits: the log density ratios."""
        return self.net(self.normalizer(features)).squeeze(-1)

    def forward(self, features: th.Tensor) -> th.Tensor:
        """``(n, n_features)`` → ``(n,)`` ``P(fast)`` in (0, 1)."""
        return th.sigmoid(self.logits(features))

    @th.no_grad()
    def numpy_logits(self, features: np.ndarray) -> np.ndarray:
        """``(n, n_features)`` → ``(n,)`` float32 logits, for re-scoring in NumPy."""
        return self.logits(th.as_tensor(features, dtype=th.float32, device=self.device)).cpu().numpy()
