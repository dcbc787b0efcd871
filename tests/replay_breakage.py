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


def _first_row(batch: WeightedSamples, batch_size: int) -> WeightedSamples:
    """``batch_size`` copies of a batch's first transition, its weights and control flag included."""
    rows = np.zeros(batch_size, dtype=np.int64)
    return batch._replace(
        samples=take_rows(batch.samples, rows),
        indices=batch.indices[rows],
        weights=batch.weights[rows],
        raw_weights=batch.raw_weights[rows],
        control=batch.control[rows],
    )


def replay_one_transition_in_every_draw(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """
    As :func:`replay_one_transition`, for every public draw of the buffer: a candidate pool's
    ``select_from_candidates``, the sum tree's ``sample_weighted`` and ``alpha=0``'s ``sample_uniform``.
    Every batch is made of the first transition the buffer ever handed out, repeated (with its IS weight).

    :param monkeypatch: Undoes the patch at the end of the test.
    :return: A one-element list counting the patched draws.
    """
    select, sample = ComplementaryReplayBuffer.select_from_candidates, ComplementaryReplayBuffer.sample_weighted
    uniform = ComplementaryReplayBuffer.sample_uniform
    frozen: dict[int, WeightedSamples] = {}
    calls = [0]

    def freeze(buffer: ComplementaryReplayBuffer, batch: WeightedSamples) -> WeightedSamples:
        calls[0] += 1
        first = frozen.setdefault(id(buffer), batch)
        return _first_row(first, len(batch.indices))

    def select_one(
        self: ComplementaryReplayBuffer, candidates: np.ndarray, samples: object, scores: np.ndarray, *args, **kwargs
    ) -> tuple[WeightedSamples, np.ndarray]:
        batch, rates = select(self, candidates, samples, scores, *args, **kwargs)  # type: ignore[arg-type]
        return freeze(self, batch), rates

    def sample_one(self: ComplementaryReplayBuffer, *args, **kwargs) -> WeightedSamples:
        return freeze(self, sample(self, *args, **kwargs))

    def uniform_one(self: ComplementaryReplayBuffer, *args, **kwargs) -> WeightedSamples:
        return freeze(self, uniform(self, *args, **kwargs))

    monkeypatch.setattr(ComplementaryReplayBuffer, "select_from_candidates", select_one)
    monkeypatch.setattr(ComplementaryReplayBuffer, "sample_weighted", sample_one)
    monkeypatch.setattr(ComplementaryReplayBuffer, "sample_uniform", uniform_one)
    return calls


def select_regardless_of_scores(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """
    Break draw-time selection differently: the pool is scored as usual, but the selection is handed
    equal scores, so it picks uniformly from the pool (with IS weights of 1).

    :param monkeypatch: Undoes the patch at the end of the test.
    :return: A one-element list counting the patched selections.
    """
    original = ComplementaryReplayBuffer.select_from_candidates
    calls = [0]

    def select(
        self: ComplementaryReplayBuffer, candidates: np.ndarray, samples: object, scores: np.ndarray, *args, **kwargs
    ) -> tuple[WeightedSamples, np.ndarray]:
        calls[0] += 1
        return original(self, candidates, samples, np.ones_like(scores), *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(ComplementaryReplayBuffer, "select_from_candidates", select)
    return calls
