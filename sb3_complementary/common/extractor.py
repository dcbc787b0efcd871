"""
The experience extractor: a classifier of the fast (recent) memory against the slow (whole) memory.

The extractor is a small MLP ``c(x) = P(x comes from the fast memory)``, trained on balanced
batches: half from the ``fast_memory`` freshest transitions (label 1), half drawn uniformly from
the whole buffer (label 0). With balanced classes its odds ``c / (1 - c) = exp(logit)`` estimate
the density ratio ``d_fast(x) / d_slow(x)``: how much a stored transition looks like what the
agent does now (likelihood-free importance weights, Sinha et al., L4DC 2022). The labels are free
and exact, and they move with the policy, because the fast memory does. The replay turns the
tempered, self-normalised, capped ratio into each transition's score (:func:`ratio_weights`).

This module holds the whole extractor, in the order a transition meets it: its inputs
(:func:`ratio_inputs`), the network (:class:`ExperienceExtractor`), the fit
(:func:`fit_classifier`), the scores (:func:`ratio_weights`), the held-out evidence that it
learns something (:func:`held_out_auc`, a ROC AUC from rank statistics), and the callback that
runs its schedule inside ``learn()`` (:class:`ExtractorTrainingCallback`). Its settings
(``extractor_kwargs``) are checked in :mod:`~sb3_complementary.common.extractor_settings`.

A fixed slice of the buffer (a transition at row ``r`` of env ``e`` with ``(r + e) % HOLDOUT_MODULUS
== 0``: one row in eight of every env, and one env in eight of every row) is never trained on: the
classifier's ROC AUC on it is the held-out evidence. A fast memory of at least ``MIN_FAST_MEMORY``
(16) transitions always holds some of it.

The functions take the replay buffer as ``buffer`` (a
:class:`~sb3_complementary.common.buffers.ComplementaryReplayBuffer`), and the callback its model;
this module imports neither, so that both can import from here.
"""

import warnings
from typing import Any

import numpy as np
import torch as th
from gymnasium import spaces
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.utils import get_device
from torch import nn
from torch.nn import functional as F

#: Transitions at row ``r`` of env ``e`` with ``(r + e) % HOLDOUT_MODULUS == 0`` are held out of every fit.
HOLDOUT_MODULUS = 8
#: Held-out transitions drawn from the slow memory to measure the ROC AUC.
AUC_SAMPLE = 2048


# ---------------------------------------------------------------------------------------------- inputs
def action_feature_dim(action_space: spaces.Space) -> int:
    """Width of the action block: one-hot for ``Discrete``/``MultiDiscrete``, raw for ``Box``/``MultiBinary``."""
    if isinstance(action_space, spaces.Discrete):
        return int(action_space.n)
    if isinstance(action_space, spaces.MultiDiscrete):
        return int(np.sum(action_space.nvec))
    if isinstance(action_space, (spaces.Box, spaces.MultiBinary)):
        return int(np.prod(action_space.shape))
    raise ValueError(f"Unsupported action space for complementary replay features: {action_space}")


def encode_actions(action_space: spaces.Space, action: np.ndarray) -> np.ndarray:
    """
    ``(n, action_dim)`` stored actions → ``(n, A)`` float32 action block (``A = action_feature_dim``).

    ``Discrete`` and ``MultiDiscrete`` actions become one-hot; ``Box`` actions (already scaled to
    ``[-1, 1]`` by SB3's actor-critics) are clipped to ``[-1, 1]``, so a raw Box stays bounded.
    """
    action = np.asarray(action)
    n = action.shape[0]
    if isinstance(action_space, spaces.Discrete):
        return np.eye(int(action_space.n), dtype=np.float32)[
            action.reshape(-1).astype(np.int64) - int(action_space.start)
        ]
    if isinstance(action_space, spaces.MultiDiscrete):
        offsets = np.concatenate([[0], np.cumsum(action_space.nvec)[:-1]])
        out = np.zeros((n, int(np.sum(action_space.nvec))), dtype=np.float32)
        np.put_along_axis(out, action.reshape(n, -1).astype(np.int64) + offsets, 1.0, axis=1)
        return out
    if isinstance(action_space, spaces.Box):
        return np.clip(action.reshape(n, -1), -1.0, 1.0).astype(np.float32)
    return action.reshape(n, -1).astype(np.float32)


def _flat_observations(buffer: Any, storage: Any, rows: np.ndarray, envs: np.ndarray) -> np.ndarray | None:
    """``(n, d)`` float32 observations of flat Box or MultiBinary spaces (or a Dict of them); None for images."""
    space = buffer.observation_space
    if isinstance(space, spaces.Dict):
        keys = [key for key in space.spaces if key not in buffer.ratio_excluded_keys]
        boxes = [space.spaces[key] for key in keys]
        parts = [storage[key] for key in keys]
    else:
        boxes, parts = [space], [storage]
    if not all(isinstance(box, (spaces.Box, spaces.MultiBinary)) and len(box.shape) == 1 for box in boxes):
        return None
    return np.concatenate([part[rows, envs].reshape(len(rows), -1) for part in parts], axis=1).astype(np.float32)


def ratio_inputs(buffer: Any, indices: np.ndarray) -> np.ndarray:
    """
    ``(n, d)`` float32 input of the extractor: what a transition *is*, never when it came.

    Columns: observation, ``next_observation - observation``, action (one-hot for Discrete),
    reward, terminal flag. The next-state difference lets the classifier see a change of
    dynamics, not only of the state distribution. Age, sample counts and ``|TD|`` staleness are
    left out on purpose: they tell the fast memory from the slow one by recency alone, and the
    ratio would become a recency weight. The task id is left out too, so a multi-task ratio
    weighs the behaviour, not the label. Image observations (and Dict spaces with non-flat
    entries) fall back to the action, reward and terminal columns only; the buffer's
    ``ratio_excluded_keys`` (HER: ``desired_goal``, which relabelling changes) are left out.

    :param buffer: The replay buffer.
    :param indices: ``(n,)`` flat indices ``row * n_envs + env``.
    """
    rows, envs = np.divmod(indices, buffer.n_envs)
    columns = [
        encode_actions(buffer.action_space, buffer.actions[rows, envs]),
        buffer.rewards[rows, envs][:, None].astype(np.float32),
        buffer.terminals[rows, envs][:, None],
    ]
    obs = _flat_observations(buffer, buffer.observations, rows, envs)
    if obs is not None:
        if buffer.optimize_memory_usage:
            next_obs = _flat_observations(buffer, buffer.observations, (rows + 1) % buffer.buffer_size, envs)
        else:
            next_obs = _flat_observations(buffer, buffer.next_observations, rows, envs)
        assert next_obs is not None
        columns = [obs, next_obs - obs, *columns]
    return np.concatenate(columns, axis=1).astype(np.float32)


# ---------------------------------------------------------------------------------------------- network
class RunningNormalizer(nn.Module):
    """
    Running mean/variance of the extractor's inputs (parallel Welford update).

    SB3's ``RunningMeanStd`` does the same in NumPy; holding the statistics in registered
    buffers instead puts them in the extractor's ``state_dict``, so ``model.save``/``load``
    carry them with the weights.

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

    The logit is the log density ratio of a transition (fast memory against the whole buffer);
    the ratio itself is ``exp(logit)``, 1 where fast and slow are alike. The extractor has its
    own optimizer (``self.optimizer``): it never shares gradients with the policy, and its
    outputs are always detached from the policy's loss.

    The last layer is zero-initialised, so every transition starts at logit 0, a density ratio
    of 1: a freshly built extractor cannot starve any data.

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


# ---------------------------------------------------------------------------------------------- fit
def held_out(indices: np.ndarray, n_envs: int) -> np.ndarray:
    """
    ``(n,)`` True where a flat index ``row * n_envs + env`` belongs to the held-out slice.

    The slice is ``(row + env) % HOLDOUT_MODULUS == 0``, not ``index % HOLDOUT_MODULUS``: with an
    even ``n_envs`` the latter would hold out env 0 only (and never train on it with 8 or 16 envs).
    With one env both are the same slice.
    """
    rows, envs = np.divmod(indices, n_envs)
    return (rows + envs) % HOLDOUT_MODULUS == 0


def fit_ready(buffer: Any, fast_memory: int) -> bool:
    """Whether the buffer holds at least twice the fast memory: before that, fast and slow are nearly the same data."""
    return bool(buffer.n_valid() >= 2 * fast_memory)


def _slice(pool: np.ndarray, held: bool, n_envs: int) -> np.ndarray:
    """The held-out (``held``) or the trainable part of some flat indices."""
    return pool[held_out(pool, n_envs) == held]


def _draw(pool: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    return pool[rng.integers(0, len(pool), size=n)]


def fit_classifier(
    extractor: ExperienceExtractor,
    buffer: Any,
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
        indices = np.concatenate([_draw(fast_pool, n_fast, rng), _draw(slow_pool, batch_size - n_fast, rng)])
        x = th.as_tensor(buffer.ratio_inputs(indices), device=extractor.device)
        extractor.normalizer.update(x)
        loss = F.binary_cross_entropy_with_logits(extractor.logits(x), labels)
        extractor.optimizer.zero_grad()
        loss.backward()
        extractor.optimizer.step()
        losses.append(loss.item())
    return float(np.mean(losses))


# ---------------------------------------------------------------------------------------------- scores
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


# ---------------------------------------------------------------------------------------------- evidence
@th.no_grad()
def held_out_auc(
    extractor: ExperienceExtractor,
    buffer: Any,
    fast_memory: int,
    rng: np.random.Generator,
) -> float:
    """
    ROC AUC of the classifier on held-out transitions: every held-out one of the fast memory
    against :data:`AUC_SAMPLE` held-out ones of the whole buffer. 0.5 = it cannot tell them apart.

    :param rng: The generator the slow sample is drawn from.
    """
    fast = _slice(buffer.recent_indices(fast_memory), held=True, n_envs=buffer.n_envs)
    slow = _draw(_slice(buffer.valid_indices(), held=True, n_envs=buffer.n_envs), AUC_SAMPLE, rng)
    indices = np.concatenate([fast, slow])
    logits = extractor.logits(th.as_tensor(buffer.ratio_inputs(indices), device=extractor.device))
    labels = np.concatenate([np.ones(len(fast)), np.zeros(len(slow))])
    return roc_auc(labels, logits.cpu().numpy())


def average_ranks(values: np.ndarray) -> np.ndarray:
    """
    1-based ranks of ``values``, tied values sharing the mean of the ranks they span.

    :param values: ``(n,)`` finite numbers.
    :return: ``(n,)`` float64 ranks; they sum to ``n * (n + 1) / 2``.
    """
    values = np.asarray(values).reshape(-1)
    _, inverse, counts = np.unique(values, return_inverse=True, return_counts=True)
    # Distinct value k (in sorted order) spans ranks ends[k] - counts[k] + 1 .. ends[k].
    ends = np.cumsum(counts)
    mean_rank = ends - (counts - 1) / 2.0
    return mean_rank[inverse.reshape(-1)].astype(np.float64)


def roc_auc(labels: np.ndarray, scores: np.ndarray) -> float:
    """
    Area under the ROC curve of ``scores`` for the binary ``labels``: the Mann–Whitney U statistic
    of the positive scores against the negative ones, divided by ``n_pos * n_neg``. Tied scores
    share their average rank, which counts a tie one half (as ``sklearn.metrics.roc_auc_score``).

    :param labels: ``(n,)`` binary labels; non-zero (or True) is the positive class.
    :param scores: ``(n,)`` finite scores, larger meaning "more likely positive".
    :return: The AUC in ``[0, 1]``: 1 when every positive scores above every negative, 0.5 for
        scores that cannot tell the classes apart, NaN when one class is empty.
    :raises ValueError: If the shapes differ or a score is not finite.
    """
    labels = np.asarray(labels).reshape(-1)
    scores = np.asarray(scores, dtype=np.float64).reshape(-1)
    if labels.shape != scores.shape:
        raise ValueError(f"labels and scores must have the same length, got {labels.size} and {scores.size}")
    if not np.all(np.isfinite(scores)):
        raise ValueError("roc_auc needs finite scores")
    positive = labels.astype(bool)
    n_pos = int(positive.sum())
    n_neg = positive.size - n_pos
    if n_pos == 0 or n_neg == 0:
        return float("nan")
    rank_sum = float(average_ranks(scores)[positive].sum())
    u_statistic = rank_sum - n_pos * (n_pos + 1) / 2.0
    return u_statistic / (n_pos * n_neg)


# ---------------------------------------------------------------------------------------------- schedule
class ExtractorTrainingCallback(BaseCallback):
    """
    Run the experience extractor's schedule inside ``learn()``: at the end of each rollout, fit the
    extractor once ``train_freq`` env steps have passed since its last fit, and re-score the whole
    buffer once ``refresh_interval`` env steps have passed since its last re-score. Both happen
    between rollouts, in batches, never per sample in the hot loop.

    A weighted model with an extractor (``contribution="density_ratio"``, ``alpha > 0``) adds one
    with the schedule of its ``extractor_kwargs`` to the callbacks of every ``learn()`` call, unless
    the user passed one: pass your own for another schedule. It calls only the model's public
    ``fit_extractor()`` and ``refresh_scores()`` (which log under ``complementary/``) and reads
    their ``last_fit_step`` and ``last_refresh_step``, which are saved with the model, so a resumed
    run keeps its schedule.

    :param train_freq: Env steps between fits, >= 1 (None: the model's ``extractor_kwargs["train_freq"]``).
    :param refresh_interval: Env steps between re-scores, >= 1 (None: the model's
        ``extractor_kwargs["refresh_interval"]``).
    :param verbose: SB3's verbosity.
    """

    def __init__(self, train_freq: int | None = None, refresh_interval: int | None = None, verbose: int = 0) -> None:
        super().__init__(verbose)
        for name, value in (("train_freq", train_freq), ("refresh_interval", refresh_interval)):
            if value is not None and (int(value) != value or value < 1):
                raise ValueError(f"ExtractorTrainingCallback({name}=...) must be a whole number >= 1, got {value!r}")
        self.train_freq = train_freq
        self.refresh_interval = refresh_interval

    def _init_callback(self) -> None:
        if getattr(self.model, "extractor", None) is None:
            raise ValueError(
                f"ExtractorTrainingCallback needs a model with an experience extractor, got "
                f"{type(self.model).__name__} without one (only contribution='density_ratio' with alpha > 0 builds one)"
            )

    def _on_step(self) -> bool:
        return True

    def _on_rollout_end(self) -> None:
        model: Any = self.model
        settings = model.extractor_settings
        train_freq = settings["train_freq"] if self.train_freq is None else self.train_freq
        refresh_interval = settings["refresh_interval"] if self.refresh_interval is None else self.refresh_interval
        if model.num_timesteps - model.last_fit_step >= train_freq:
            model.fit_extractor()
        if model.num_timesteps - model.last_refresh_step >= refresh_interval and model.replay_buffer.size():
            model.refresh_scores()
