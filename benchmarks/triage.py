"""
Issue 45's triage candidates: three draws on LaBER's pool that should be safe by construction,
and the age of what every contender draws. Benchmark code, not the library: a candidate enters
the library only if it survives the triage and its screen (``docs/benchmarks/history.md``).

Every candidate scores a uniform pool of ``candidate_pool`` batches by fresh ``|TD|``, as LaBER
does, and differs from LaBER only in how it picks from the pool and weights what it picked:

- ``rank``: ``P(i) ∝ rank_i ** -rank_exponent`` (rank 1 = largest ``|TD|``), no IS weights
  (Schaul et al. 2016's outlier-robust variant: a candidate's share does not grow with the size of
  its ``|TD|``, only with its place in the pool);
- ``anneal``: LaBER's ``P(i) ∝ |TD_i|`` with the IS weights ``(P * p_i) ** -beta``, ``beta``
  annealed linearly from 0 to 1 over training (PER's schedule on LaBER's pool): biased early,
  unbiased late;
- ``ratio_td``: ``P(i) ∝ ratio_i * |TD_i|`` (the density ratio of the experience extractor), with
  weights ``q_i / p_i`` against the ratio-only draw ``q_i ∝ ratio_i``: the weights remove only the
  ``|TD|`` part of the bias, so the extractor sets the distribution the update sees and ``|TD|``
  only cuts its variance (LaBER's correction with the ratio's target in place of the uniform one);
- ``laber``: the library's own draw, unchanged (the fixed contender, for the age of its draws).

Age of the draws: every contender here records, for its last 1,000 draws, the share of drawn
transitions stored while task 0 ran (on a drift entry: before the change), beside that task's
share of the stored data, which is what uniform replay draws in expectation. The harness writes
both into the run's curve at every eval point (``draw_share_task0``, ``data_share_task0``).
"""

from __future__ import annotations

from collections import deque
from typing import Any

import numpy as np

from sb3_complementary import ComplementaryDQN
from sb3_complementary.common.buffers import WeightedSamples

SELECTIONS = ("laber", "rank", "anneal", "ratio_td")
#: Draws whose age the diagnostics average (the library keeps as many selections).
AGE_WINDOW = 1000


class TriageDQN(ComplementaryDQN):
    """
    :class:`~sb3_complementary.ComplementaryDQN` with one of the triage's draws (module docstring).

    :param selection: ``"laber"``, ``"rank"``, ``"anneal"`` or ``"ratio_td"``. ``ratio_td`` needs
        ``contribution="density_ratio"`` (the extractor and its scores); the others ``"laber"``.
    :param rank_exponent: The exponent of ``rank`` (Schaul et al.'s 0.7).
    :param kwargs: ComplementaryDQN's arguments, with ``alpha=1`` and ``candidate_pool >= 1``.
    """

    def __init__(self, *args: Any, selection: str = "laber", rank_exponent: float = 0.7, **kwargs: Any) -> None:
        if selection not in SELECTIONS:
            raise ValueError(f"selection must be one of {SELECTIONS}, got {selection!r}")
        needed = "density_ratio" if selection == "ratio_td" else "laber"
        if kwargs.get("contribution", "laber") != needed or kwargs.get("alpha", 1.0) != 1.0:
            raise ValueError(f"selection={selection!r} runs with contribution={needed!r} and alpha=1")
        self.selection = selection
        self.rank_exponent = float(rank_exponent)
        self._draw_task0: deque[float] = deque(maxlen=AGE_WINDOW)
        super().__init__(*args, **kwargs)
        if not self.candidate_pool:
            raise ValueError("the triage's selections pick from a pool: set candidate_pool >= 1")

    def _is_exponent(self) -> float:
        if self.selection == "anneal":
            return min(max(1.0 - self._current_progress_remaining, 0.0), 1.0)
        return 0.0 if self.selection == "rank" else 1.0  # ratio_td: q / p below; laber: its own 1

    def _draw_batch(self, batch_size: int) -> WeightedSamples:
        batch = super()._draw_batch(batch_size) if self.selection == "laber" else self._triage_draw(batch_size)
        self._draw_task0.append(float(np.mean(self.replay_buffer.task_ids.reshape(-1)[batch.indices] == 0)))
        return batch

    def _triage_draw(self, batch_size: int) -> WeightedSamples:
        buffer = self.replay_buffer
        candidates = buffer.uniform_indices(self.candidate_pool * batch_size)
        samples, candidates = buffer.gather_pool(candidates, env=self._vec_normalize_env)
        td_abs = self._current_td_abs(samples)
        if self.selection == "rank":
            ranks = np.empty(len(td_abs))
            ranks[np.argsort(-np.nan_to_num(td_abs, nan=0.0), kind="stable")] = np.arange(1, len(td_abs) + 1)
            scores = ranks**-self.rank_exponent
        elif self.selection == "ratio_td":
            ratio = buffer.scores[candidates].astype(np.float64)
            scores = ratio * np.maximum(td_abs, buffer.score_floor)
        else:
            scores = td_abs
        # The buffer's IS exponent (set by _is_exponent) gives (P * p_i) ** -beta, un-normalised.
        batch, rates = buffer.select_from_candidates(candidates, samples, scores, batch_size, max_normalized=False)
        if self.selection == "ratio_td":  # q_i / p_i = (P * p_i) ** -1 * ratio_i / mean(ratio)
            raw = batch.raw_weights * buffer.scores[batch.indices] / ratio.mean()
            batch = batch._replace(weights=buffer.to_torch(raw.astype(np.float32).reshape(-1, 1)), raw_weights=raw)
        self._selection_rates.append(rates)
        return batch

    def replay_diagnostics(self) -> dict[str, float]:
        """The library's diagnostics, plus the age of the last 1,000 draws (module docstring)."""
        diagnostics = super().replay_diagnostics()
        task_ids = self.replay_buffer.task_ids.reshape(-1)[self.replay_buffer.valid_indices()]
        diagnostics["draw_share_task0"] = float(np.mean(self._draw_task0)) if self._draw_task0 else float("nan")
        diagnostics["data_share_task0"] = float(np.mean(task_ids == 0)) if task_ids.size else float("nan")
        return diagnostics
