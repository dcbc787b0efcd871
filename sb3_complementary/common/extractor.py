"""The experience extractor: a small MLP whose logit scores a transition (a score in (0, 1), or a log density ratio)."""

import numpy as np
import torch as th
from stable_baselines3.common.utils import get_device
from torch import nn


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
    Scores each stored transition by how much it is expected to help the actor now.

    ``features → running normalisation → MLP → sigmoid``. The score is a probability-like
    value in (0, 1) that the replay turns into a sampling priority. The extractor has its
    own optimizer (``self.optimizer``): it never shares gradients with the actor, and its
    outputs are always detached from the actor's loss (docs/design.md, "Pitfalls and their guards").

    The last layer is zero-initialised, so every transition starts at logit 0: the neutral score
    0.5 of the label signals, and a density ratio of 1 (fast and slow alike). A freshly built
    extractor cannot starve any data (docs/design.md, "Pitfalls and their guards").

    :param n_features: Width of the feature vector.
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
        """``(n, n_features)`` → ``(n,)`` pre-sigmoid scores."""
        return self.net(self.normalizer(features)).squeeze(-1)

    def forward(self, features: th.Tensor) -> th.Tensor:
        """``(n, n_features)`` → ``(n,)`` scores in (0, 1)."""
        return th.sigmoid(self.logits(features))

    @th.no_grad()
    def score(self, features: np.ndarray) -> np.ndarray:
        """NumPy convenience for re-scoring: ``(n, n_features)`` → ``(n,)`` float32 scores."""
        return self(th.as_tensor(features, dtype=th.float32, device=self.device)).cpu().numpy()
