"""A deliberately broken replay, to show that the learning tests can fail."""

import numpy as np
import pytest

from sb3_complementary.common.buffers import ComplementaryReplayBuffer, WeightedSamples, take_rows


def replay_one_transition(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """
    Break draw-time selection: every batch becomes ``batch_size`` copies of the first transition
    the buffer ever selected. The pool is still drawn and scored as usual (so the model runs its
    whole train step), but learning sees one transition only.

    :param monkeypatch: Undoes the patch at the end of the test.
    :return: A one-element list counting the patched selections (a test checks that the patch was
        used at all: a default that stopped drawing through a candidate pool would bypass it).
    """
    original = ComplementaryReplayBuffer.select_from_candidates
    frozen: dict[int, WeightedSamples] = {}
    calls = [0]

    def select(
        self: ComplementaryReplayBuffer,
        candidates: np.ndarray,
        samples: object,
        scores: np.ndarray,
        batch_size: int,
        **kwargs: bool,
    ) -> tuple[WeightedSamples, np.ndarray]:
        batch, rates = original(self, candidates, samples, scores, batch_size, **kwargs)  # type: ignore[arg-type]
        if id(self) not in frozen:
            rows = np.zeros(batch_size, dtype=np.int64)
            frozen[id(self)] = batch._replace(
                samples=take_rows(batch.samples, rows),
                indices=batch.indices[rows],
                weights=batch.weights[rows],
                raw_weights=batch.raw_weights[rows],
                control=batch.control[rows],
            )
        calls[0] += 1
        return frozen[id(self)], rates

    monkeypatch.setattr(ComplementaryReplayBuffer, "select_from_candidates", select)
    return calls
