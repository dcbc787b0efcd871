"""
What scores the replay, behind one interface: the fast/slow density ratio, the label signals the
extractor regresses (``td``, ``influence``, ``outcome``), or fresh |TD| measured at draw time
(``fresh_td``, and ``laber`` with LaBER's unbiasing IS weights).

Each kind is a stateless object: the state (extractor, label store, signal, scores) lives on the
model and its buffer, so that ``save``/``load`` carry it. The model's ``fit_extractor()``,
``refresh_scores()`` and draw-time selection call the kind it was built with
(:func:`importance_for`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import torch as th
from torch.nn import functional as F

from sb3_complementary.common import density_ratio
from sb3_complementary.common.buffers import NEUTRAL_SCORE, ComplementaryReplayBuffer
from sb3_complementary.common.contribution import SIGNALS

if TYPE_CHECKING:
    from sb3_complementary.common.complementary_mixin import ComplementaryMixin

#: Chunk of transitions per forward pass when the whole buffer is re-scored.
RESCORE_CHUNK = 65536


class ReplayImportance:
    """
    The default behaviour of the hooks; a kind overrides what it does differently.

    :cvar learns_labels: Whether gradient steps label their batch for a label store.
    :cvar neutral_score: Score of a new transition with ``initial_score="neutral"``.
    :cvar needs_pool: Whether it scores a candidate pool only (``candidate_pool >= 1``).
    :cvar max_normalized_weights: Whether a pool selection's IS weights are divided by their batch maximum.
    """

    learns_labels = False
    neutral_score = NEUTRAL_SCORE
    #: Whether the kind scores a candidate pool only (no pool, no scores).
    needs_pool = False
    #: Whether a pool selection's IS weights are divided by their batch maximum (PER's rule).
    max_normalized_weights = True

    def input_dim(self, buffer: ComplementaryReplayBuffer) -> int:
        """Width of the extractor's input."""
        return buffer.n_features

    def is_exponent(self, model: ComplementaryMixin) -> float | None:
        """The IS exponent, fixed; None: PER's ``beta``, annealed to 1 over ``learn()``."""
        return None

    def protected_rows(self, model: ComplementaryMixin) -> int:
        """Freshest rows that lowest-score eviction must not overwrite."""
        return 0

    def fit(self, model: ComplementaryMixin, gradient_steps: int, batch_size: int, coupling_coef: float) -> float:
        """Fit the extractor; the mean loss, or NaN when there is nothing to fit on (yet)."""
        return float("nan")

    def rescore(self, model: ComplementaryMixin) -> np.ndarray:
        """Re-score the whole buffer; the flat indices scored."""
        return model.replay_buffer.valid_indices()

    def candidate_scores(self, model: ComplementaryMixin, candidates: np.ndarray, td_abs: np.ndarray) -> np.ndarray:
        """``(P,)`` scores of a uniform candidate pool, given its ``(P,)`` |TD| measured now."""
        buffer = model.replay_buffer
        return model.extractor.score(buffer.feature_matrix(candidates, td_abs=td_abs))


class LabelSignalImportance(ReplayImportance):
    """
    The first study's signals: the extractor regresses per-sample labels (BCE on the label store,
    plus ``coupling_coef`` × KL(sampling distribution ‖ uniform)), and its output is the score.
    """

    learns_labels = True

    def fit(self, model: ComplementaryMixin, gradient_steps: int, batch_size: int, coupling_coef: float) -> float:
        assert model.contribution_signal is not None
        model.contribution_signal.close_window(model.replay_buffer.features.pop_finished_returns())
        store, extractor = model.label_store, model.extractor
        if len(store) < batch_size:
            return float("nan")
        losses = []
        for _ in range(gradient_steps):
            features, labels = store.sample(batch_size, model.replay_rng)
            x = th.as_tensor(features, device=extractor.device)
            extractor.normalizer.update(x)
            loss = F.binary_cross_entropy_with_logits(
                extractor.logits(x), th.as_tensor(labels, device=extractor.device)
            )
            if coupling_coef > 0:
                loss = loss + coupling_coef * self._kl_to_uniform(model, batch_size)
            extractor.optimizer.zero_grad()
            loss.backward()
            extractor.optimizer.step()
            losses.append(loss.item())
        model.logger.record("complementary/positive_label_share", store.positive_share())
        return float(np.mean(losses))

    @staticmethod
    def _kl_to_uniform(model: ComplementaryMixin, n: int) -> th.Tensor:
        """KL(P ‖ U) of the score-proportional distribution over a uniform sample of the buffer (differentiable)."""
        buffer = model.replay_buffer
        valid = buffer.valid_indices()
        indices = valid[model.replay_rng.integers(0, len(valid), size=n)]
        x = th.as_tensor(buffer.feature_matrix(indices), device=model.extractor.device)
        priorities = (model.extractor(x).clamp_min(buffer.score_floor) + buffer.epsilon) ** buffer.alpha
        p = priorities / priorities.sum()
        return (p * th.log(p * n + 1e-12)).sum()

    def rescore(self, model: ComplementaryMixin) -> np.ndarray:
        return model.replay_buffer.refresh_scores(model.extractor.score, RESCORE_CHUNK)


class DensityRatioImportance(ReplayImportance):
    """
    The fast/slow density ratio (:mod:`~sb3_complementary.common.density_ratio`): a classifier of
    the fast memory against the whole buffer, whose tempered, self-normalised, capped odds are the
    scores; a new transition enters at the mean ratio, and the IS exponent is fixed.
    """

    neutral_score = 1.0

    def input_dim(self, buffer: ComplementaryReplayBuffer) -> int:
        return buffer.ratio_input_dim

    def is_exponent(self, model: ComplementaryMixin) -> float | None:
        return model.ratio_is_exponent  # the shift toward the current agent's data is the point

    def protected_rows(self, model: ComplementaryMixin) -> int:
        # Eviction moves old transitions into victims' slots: never into the fast memory.
        return -(-model.fast_memory // model.n_envs)

    def fit(self, model: ComplementaryMixin, gradient_steps: int, batch_size: int, coupling_coef: float) -> float:
        buffer = model.replay_buffer
        if not density_ratio.fit_ready(buffer, model.fast_memory):
            return float("nan")
        loss = density_ratio.fit_classifier(
            model.extractor, buffer, model.fast_memory, gradient_steps, batch_size, model.replay_rng
        )
        model.extractor_auc = density_ratio.held_out_auc(model.extractor, buffer, model.fast_memory, model.replay_rng)
        model.logger.record("complementary/roc_auc", model.extractor_auc)
        return loss

    def rescore(self, model: ComplementaryMixin) -> np.ndarray:
        buffer = model.replay_buffer
        indices = buffer.valid_indices()
        if np.isnan(model.extractor_auc):  # not fitted yet: every transition counts the same
            weights = np.ones(len(indices), dtype=np.float32)
        else:
            chunks = [indices[start : start + RESCORE_CHUNK] for start in range(0, len(indices), RESCORE_CHUNK)]
            logits = np.concatenate([self.logits(model, chunk) for chunk in chunks])
            weights = density_ratio.ratio_weights(logits, model.ratio_temperature, model.ratio_cap)
        buffer.set_all_scores(indices, weights)
        return indices

    @staticmethod
    @th.no_grad()
    def logits(model: ComplementaryMixin, indices: np.ndarray) -> np.ndarray:
        """``(n,)`` the classifier's logits (log density ratios) of some stored transitions."""
        x = th.as_tensor(model.replay_buffer.ratio_inputs(indices), device=model.extractor.device)
        return model.extractor.logits(x).cpu().numpy()

    def candidate_scores(self, model: ComplementaryMixin, candidates: np.ndarray, td_abs: np.ndarray) -> np.ndarray:
        # "Looks like the current agent's data" times "is still wrong".
        buffer = model.replay_buffer
        return buffer.scores[candidates] * np.maximum(td_abs, buffer.score_floor)


class FreshTDImportance(ReplayImportance):
    """
    No extractor: the candidates' |TD| measured at draw time (LaBER's selection), floored at
    ``score_floor`` (LAP's floor with ``score_floor=1``) and never undone by IS weights.
    """

    needs_pool = True

    def is_exponent(self, model: ComplementaryMixin) -> float | None:
        return 0.0

    def candidate_scores(self, model: ComplementaryMixin, candidates: np.ndarray, td_abs: np.ndarray) -> np.ndarray:
        return td_abs


class LaBERImportance(FreshTDImportance):
    """
    LaBER as its authors define it (Lahire et al., ICML 2022, "LaBER-mean"): the candidates' fresh
    |TD| on the large batch, and the IS correction that keeps the gradient unbiased, not annealed:
    with ``uniform_fraction=0`` a candidate's weight is ``(P q_i) ** -1 = mean(p) / p_i``, the
    pool's mean priority over its own, with no division by the batch maximum. It is
    ``fresh_td`` with the correction that ``fresh_td`` drops (a contender of the replay study;
    pass ``uniform_fraction=0, score_floor=0`` for the authors' priorities).
    """

    max_normalized_weights = False

    def is_exponent(self, model: ComplementaryMixin) -> float | None:
        return 1.0


#: Every kind, by the name the ``contribution`` knob takes.
IMPORTANCES: dict[str, ReplayImportance] = {
    "density_ratio": DensityRatioImportance(),
    **{name: LabelSignalImportance() for name in SIGNALS},
    "fresh_td": FreshTDImportance(),
    "laber": LaBERImportance(),
}


def importance_for(contribution: str) -> ReplayImportance:
    """The kind of importance a ``contribution`` name stands for."""
    return IMPORTANCES[contribution]
