"""
What a short drop-in learn must show beyond "it ran and stayed finite": checks that a broken replay fails.

Wrap a ``learn()`` in :func:`recorded_draws` and pass what it recorded to :func:`check_replay`. The
draws are read through the buffer's public methods (``select_from_candidates`` for a candidate pool,
``sample_weighted`` for the sum tree, ``sample_uniform`` for ``alpha=0``), so the checks hold whatever
the algorithm's internals look like.
"""

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, NamedTuple

import numpy as np
from stable_baselines3.common.type_aliases import TrainFrequencyUnit

from sb3_complementary import ComplementaryReplayBuffer, WeightedSamples

#: The buffer's public draws a train step takes its batch from.
DRAWS = ("select_from_candidates", "sample_weighted", "sample_uniform")
#: A healthy replay's batches, pooled over a short learn, hold at least this share of the transitions
#: it could have drawn (the stored ones, or all the rows drawn if fewer): see :func:`check_draws_spread`.
MIN_DISTINCT_SHARE = 0.25


class Draw(NamedTuple):
    """One batch a train step took, and (draw-time selection) the pool it was selected from."""

    batch: WeightedSamples
    candidates: np.ndarray | None = None
    rates: np.ndarray | None = None  # (P,) the pool's replay rates P * q_i, as select_from_candidates returns them


@contextmanager
def recorded_draws(model: Any) -> Iterator[list[Draw]]:
    """
    Record every batch the model's buffer hands out through its public draws while the block runs.

    The wrappers live on the buffer instance and are removed at the end (the buffer pickles as before).

    :param model: A model of this package, before its ``learn()``.
    :return: The list the draws are appended to, in draw order.
    """
    buffer, draws = model.replay_buffer, []
    select, sample, uniform = buffer.select_from_candidates, buffer.sample_weighted, buffer.sample_uniform

    def recording_select(candidates: np.ndarray, samples: Any, scores: np.ndarray, *args: Any, **kwargs: Any) -> Any:
        batch, rates = select(candidates, samples, scores, *args, **kwargs)
        draws.append(Draw(batch, np.array(candidates), np.array(rates)))
        return batch, rates

    def recording(draw: Any) -> Any:
        def recording_draw(*args: Any, **kwargs: Any) -> WeightedSamples:
            batch = draw(*args, **kwargs)
            draws.append(Draw(batch))
            return batch

        return recording_draw

    buffer.select_from_candidates = recording_select
    buffer.sample_weighted, buffer.sample_uniform = recording(sample), recording(uniform)
    try:
        yield draws
    finally:
        for name in DRAWS:
            vars(buffer).pop(name, None)


def expected_updates(model: Any) -> int:
    """
    The gradient steps SB3's off-policy loop asks for in the learn that brought the model to its
    ``num_timesteps``: one ``train()`` after each rollout of ``train_freq`` steps (of every env) that
    ends past ``learning_starts``, each of ``gradient_steps`` steps (-1: as many as the rollout's env steps).
    """
    assert model.train_freq.unit == TrainFrequencyUnit.STEP, "counted for a train_freq in steps"
    rollout = model.train_freq.frequency * model.n_envs
    ends = rollout * np.arange(1, model.num_timesteps // rollout + 1)
    n_train = int((ends > model.learning_starts).sum())
    return n_train * (model.gradient_steps if model.gradient_steps >= 0 else rollout)


def selects(model: Any) -> bool:
    """Whether the configuration's draws depend on the scores at all (otherwise they are uniform)."""
    buffer = model.replay_buffer
    return buffer.alpha > 0 and buffer.uniform_fraction < 1


def check_every_update_drew(model: Any, draws: list[Draw]) -> None:
    """As many gradient steps as the configuration asks for, each on a batch of ``batch_size`` from a public draw."""
    want = expected_updates(model)
    assert model._n_updates == want, f"{model._n_updates} gradient steps where the configuration asks for {want}"
    assert len(draws) == want, f"{len(draws)} batches drawn through the buffer for {want} gradient steps"
    assert all(len(draw.batch.indices) == model.batch_size for draw in draws)


def check_draws_spread(model: Any, draws: list[Draw]) -> None:
    """The batches, pooled, hold many distinct transitions: not one, nor a handful, replayed over and over."""
    drawn = np.concatenate([draw.batch.indices for draw in draws])
    possible = min(model.replay_buffer.size() * model.replay_buffer.n_envs, drawn.size)
    distinct = np.unique(drawn).size
    assert distinct >= MIN_DISTINCT_SHARE * possible, (
        f"{distinct} distinct transitions in {drawn.size} draws from {possible} that could be drawn"
    )


def check_is_weights(model: Any, draws: list[Draw]) -> None:
    """
    Selection on with an IS exponent above 0: the IS weights differ within a batch (rare picks weigh
    more). Uniform draws, or an exponent of 0: every weight is 1. All are finite and positive.
    """
    raw = np.stack([draw.batch.raw_weights for draw in draws])
    assert np.all(np.isfinite(raw)) and np.all(raw > 0)
    if selects(model) and model.replay_buffer.beta > 0:
        spread = raw.max(axis=1) > raw.min(axis=1)
        assert spread.any(), "selection is on, yet every batch has one IS weight for all its transitions"
    else:
        np.testing.assert_array_equal(raw, 1.0, err_msg="uniform draws or IS exponent 0: every IS weight is 1")


def check_selection_follows_scores(model: Any, draws: list[Draw]) -> None:
    """
    Draw-time selection: each batch is picked from its own pool, and (selection on) the pool's
    replay rates ``P * q_i`` are not all 1: the picks depend on the scores, not uniform over the pool.
    """
    pools = [draw for draw in draws if draw.candidates is not None]
    for draw in pools:
        assert np.isin(draw.batch.indices, draw.candidates).all(), "a selected transition is not in its pool"
    if pools and selects(model):
        uneven = [float(np.mean(draw.rates**2)) > 1 + 1e-9 for draw in pools]  # 1 / ESS fraction of the selection
        assert any(uneven), "selection is on, yet every pool was picked from uniformly"


def check_trained_buffer(model: Any, steps: int) -> None:
    """
    A learn of ``steps`` env steps ran updates, filled a weighted buffer, and kept a healthy sum tree
    exactly where the configuration's draws read one (``alpha > 0`` without a candidate pool).
    """
    assert model.num_timesteps >= steps
    assert model._n_updates > 0
    buffer = model.replay_buffer
    assert isinstance(buffer, ComplementaryReplayBuffer)
    assert buffer.size() > 0
    tree_draws = model.alpha > 0 and not model.candidate_pool
    assert (buffer.tree is not None) == tree_draws, "a tree is kept exactly where the draws read it"
    if tree_draws:
        buffer.sample_weighted(1)  # new rows get their priority lazily: read once
        leaves = buffer.tree.leaves
        assert np.all(np.isfinite(leaves)) and np.all(leaves >= 0) and buffer.tree.total > 0


def check_replay(model: Any, draws: list[Draw]) -> None:
    """
    Every check above: the updates the configuration asks for, draws spread over the buffer, IS
    weights as the selection implies, picks that follow the pool's scores.
    """
    check_every_update_drew(model, draws)
    check_draws_spread(model, draws)
    check_is_weights(model, draws)
    check_selection_follows_scores(model, draws)
