"""
Contribution signals: the label the experience extractor learns (docs/design.md).

Each signal turns what one gradient step measured on a batch into targets in [0, 1] for the
extractor, through one interface: :meth:`ContributionSignal.observe` after each gradient step,
:meth:`ContributionSignal.close_window` before each extractor fit.
"""

from abc import ABC, abstractmethod
from typing import ClassVar

import numpy as np
import torch as th

from sb3_complementary.common.label_store import LabelStore
from sb3_complementary.common.validation import check_choice


def last_layer_influence(
    out_grad: th.Tensor,
    penultimate: th.Tensor,
    probe_out_grad: th.Tensor,
    probe_penultimate: th.Tensor,
) -> th.Tensor:
    """
    First-order drop of the probe loss caused by a gradient step on each sample, restricted to the last linear layer.

    For a last layer ``y = W φ + b`` the per-sample gradient is the outer product
    ``g_i [φ_i; 1]ᵀ`` with ``g_i = ∂ℓ_i/∂y_i``. A step ``-η ∇ℓ_i`` changes the mean probe loss
    ``L_p`` by ``-η ∇L_p · ∇ℓ_i``, and the dot product of two outer products factorises:

        c_i = (1/M) Σ_j (g_i · g_j) (φ_i · φ_j + 1)

    For DQN with a Huber loss, ``g_i`` is ``clip(δ_i, -1, 1)`` on the taken action and zero
    elsewhere, which gives the closed form ``Σ_j δ_i δ_j [a_i = a_j] (φ_i·φ_j + 1)``. It is two
    small matrix products per step; positive means the sample helps on the probe batch.

    :param out_grad: ``(B, K)`` gradient of each sample's own (unweighted) loss w.r.t. the layer output.
    :param penultimate: ``(B, H)`` inputs of the last linear layer.
    :param probe_out_grad: ``(M, K)`` same for the probe batch.
    :param probe_penultimate: ``(M, H)`` same for the probe batch.
    :return: ``(B,)`` contributions (up to the positive factor ``η``).
    """
    grad_dot = out_grad @ probe_out_grad.T  # (B, M)
    feature_dot = penultimate @ probe_penultimate.T + 1.0  # (B, M)
    return (grad_dot * feature_dot).mean(dim=1)


class ContributionSignal(ABC):
    """
    Interface of a contribution signal.

    :param store: Where the labelled features go.
    """

    #: Whether the algorithm must compute :func:`last_layer_influence` for :meth:`observe`.
    needs_influence: ClassVar[bool] = False

    def __init__(self, store: LabelStore) -> None:
        self.store = store

    @abstractmethod
    def observe(
        self,
        features: np.ndarray,
        td_abs: np.ndarray,
        control: np.ndarray,
        influence: np.ndarray | None = None,
    ) -> None:
        """
        Label (or remember) one trained batch.

        :param features: ``(B, n_features)`` the batch's features when it was sampled.
        :param td_abs: ``(B,)`` absolute TD errors measured by the step.
        :param control: ``(B,)`` True for samples of the uniform (control) share.
        :param influence: ``(B,)`` contributions from :func:`last_layer_influence`, if needed.
        """

    def close_window(self, finished_returns: list[float]) -> None:  # noqa: B027 - optional hook
        """Called before each extractor fit with the training-episode returns finished since the last one."""


class InfluenceSignal(ContributionSignal):
    """
    A sample is helpful when its influence on the probe loss beats the control group's.

    The uniform share of the batch plays the paper's "rollouts without experience": its mean
    influence is the baseline, and the label is the sign of "with − without" (binary), which
    also makes the labels scale-free across training.
    """

    needs_influence = True

    def observe(
        self,
        features: np.ndarray,
        td_abs: np.ndarray,
        control: np.ndarray,
        influence: np.ndarray | None = None,
    ) -> None:
        assert influence is not None, "InfluenceSignal needs the influence of each sample"
        baseline = influence[control].mean() if control.any() else np.median(influence)
        self.store.add(features, (influence > baseline).astype(np.float32))


class TDSignal(ContributionSignal):
    """
    "Learned PER": the extractor regresses the within-batch rank of ``|TD|`` (a percentile in [0, 1]).

    Ranks rather than raw errors keep the target bounded whatever the reward scale. This is
    the ablation floor: it only says whether a *learned* score can mimic PER.
    """

    def observe(
        self,
        features: np.ndarray,
        td_abs: np.ndarray,
        control: np.ndarray,
        influence: np.ndarray | None = None,
    ) -> None:
        ranks = np.argsort(np.argsort(td_abs)).astype(np.float32)
        self.store.add(features, ranks / max(len(td_abs) - 1, 1))


class OutcomeSignal(ContributionSignal):
    """
    The paper's (and ERO's) outcome credit: transitions replayed in a window are credited by
    whether the actor's training-episode returns improved over a running baseline.

    Every transition trained on between two extractor fits is remembered; at the next fit it is
    labelled 1 if the mean return of the episodes finished in that window beat the running
    baseline, 0 if it fell short (0.5 on a tie). Fitting the extractor on these labels with a
    cross-entropy loss is the same direction as REINFORCE on ``log P(sampled)`` with a baseline,
    and averages the ±1 credit over every use of a transition, as the paper does.

    :param store: Where the labelled features go.
    :param max_pending: Cap on remembered transitions per window (later batches of a long window are dropped).
    :param baseline_decay: EMA decay of the return baseline.
    """

    def __init__(self, store: LabelStore, max_pending: int = 50_000, baseline_decay: float = 0.9) -> None:
        super().__init__(store)
        self.max_pending = max_pending
        self.baseline_decay = baseline_decay
        self.baseline: float | None = None
        self._pending: list[np.ndarray] = []
        self._n_pending = 0

    def observe(
        self,
        features: np.ndarray,
        td_abs: np.ndarray,
        control: np.ndarray,
        influence: np.ndarray | None = None,
    ) -> None:
        if self._n_pending < self.max_pending:
            self._pending.append(features)
            self._n_pending += len(features)

    def close_window(self, finished_returns: list[float]) -> None:
        if not finished_returns or not self._pending:
            return  # no outcome yet: keep the window open
        mean_return = float(np.mean(finished_returns))
        if self.baseline is not None:
            advantage = mean_return - self.baseline
            label = 0.5 if advantage == 0 else float(advantage > 0)
            features = np.concatenate(self._pending)
            self.store.add(features, np.full(len(features), label, dtype=np.float32))
            self.baseline = self.baseline_decay * self.baseline + (1 - self.baseline_decay) * mean_return
        else:
            self.baseline = mean_return
        self._pending, self._n_pending = [], 0


SIGNALS: dict[str, type[ContributionSignal]] = {
    "influence": InfluenceSignal,
    "outcome": OutcomeSignal,
    "td": TDSignal,
}


def make_signal(name: str, store: LabelStore) -> ContributionSignal:
    """Build a contribution signal by name (``"influence"``, ``"outcome"`` or ``"td"``)."""
    check_choice("contribution", name, tuple(SIGNALS))
    return SIGNALS[name](store)
