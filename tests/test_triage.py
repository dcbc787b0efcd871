"""
Issue 45's triage candidates (benchmarks/triage.py): each draw and weight is the one the history
states, checked against an independent recomputation on a pool whose |TD| and ratios are set by
hand; each check has a twin showing that the neighbouring formula would fail it.
"""

import numpy as np
import pytest
import torch as th

from benchmarks.triage import TriageDQN
from sb3_complementary import ComplementaryDQN
from sb3_complementary.multitask import MultiTaskEnv

POOL = 4
BATCH = 16
KNOBS = {"candidate_pool": POOL, "uniform_fraction": 0.0, "score_floor": 0.0, "epsilon": 1e-6, "alpha": 1.0}
SMALL = {"batch_size": BATCH, "buffer_size": 2000, "learning_starts": 100, "policy_kwargs": {"net_arch": [16]}}


def _env() -> MultiTaskEnv:
    return MultiTaskEnv(tasks="cartpole", schedule="sequential", block_steps=150, variants=["default", "short_pole"])


def _filled(selection: str, steps: int = 400, **extra) -> TriageDQN:
    """A model whose buffer holds ``steps`` transitions, the first 150 from task 0, with no update yet."""
    contribution = "density_ratio" if selection == "ratio_td" else "laber"
    kwargs = {**KNOBS, **SMALL, "learning_starts": steps + 1, **extra}
    model = TriageDQN("MlpPolicy", _env(), seed=0, selection=selection, contribution=contribution, **kwargs)
    model.learn(steps)
    return model


def _draw_with_td(model: TriageDQN, td_abs: np.ndarray, monkeypatch: pytest.MonkeyPatch, seed: int = 1):
    """
    One triage draw whose pool's fresh |TD| is set by hand: ``td_abs[k]`` for the pool's ``k``-th
    candidate, or, given one value per stored transition, the candidate's own (so that a
    transition drawn twice into the pool has one |TD|). Returns the batch and the pool's indices.
    """
    np.random.seed(seed)
    pool = model.replay_buffer.uniform_indices(POOL * BATCH)
    values = td_abs[pool] if len(td_abs) > len(pool) else td_abs
    monkeypatch.setattr(model, "_current_td_abs", lambda samples: values)
    model._begin_weighted_train()
    np.random.seed(seed)
    return model._draw_batch(BATCH), pool


def test_rank_draws_by_rank_with_unit_weights(monkeypatch: pytest.MonkeyPatch) -> None:
    """``rank``: the pool's top |TD| is drawn at rank 1's share whatever its size, weights 1."""
    model = _filled("rank")
    n = POOL * BATCH
    shares = {}
    for outlier in (2.0, 1e6):  # the bias does not grow with the outlier's size
        td = np.linspace(0.1, 1.0, n)
        td[7] = outlier
        picks = []
        for seed in range(200):
            batch, pool = _draw_with_td(model, td, monkeypatch, seed)
            np.testing.assert_array_equal(batch.raw_weights, 1.0)
            picks.append(np.mean(batch.indices == pool[7]) if np.sum(pool == pool[7]) == 1 else np.nan)
        shares[outlier] = np.nanmean(picks)
    expected = 1.0 / np.sum(np.arange(1, n + 1) ** -0.7)
    for share in shares.values():
        assert share == pytest.approx(expected, rel=0.1)
    # Twin: proportional selection (fresh_td) would give the 1e6 outlier nearly every slot.
    assert 1e6 / (1e6 + np.linspace(0.1, 1.0, n).sum()) > 0.99 > 5 * shares[1e6]


def test_anneal_exponent_runs_from_zero_to_one() -> None:
    model = _filled("anneal")
    for remaining, beta in ((1.0, 0.0), (0.25, 0.75), (-0.01, 1.0)):
        model._current_progress_remaining = remaining
        assert model._is_exponent() == pytest.approx(beta)
    model._current_progress_remaining = 0.5
    model._begin_weighted_train()
    assert model.replay_buffer.beta == pytest.approx(0.5)


def test_anneal_weights_are_laber_weights_to_the_power_beta(monkeypatch: pytest.MonkeyPatch) -> None:
    model = _filled("anneal")
    td = np.random.default_rng(0).uniform(0.05, 2.0, model.replay_buffer.scores.size)
    model._current_progress_remaining = 0.6
    batch, pool = _draw_with_td(model, td, monkeypatch)
    p = (td[pool] + 1e-6) / (td[pool] + 1e-6).sum()
    positions = [int(np.flatnonzero(pool == i)[0]) for i in batch.indices]
    laber = 1.0 / (len(pool) * p[positions])  # LaBER's mean(p) / p_i
    np.testing.assert_allclose(batch.raw_weights, laber**0.4, rtol=1e-5)
    assert not np.allclose(batch.raw_weights, laber, rtol=1e-2)  # twin: the unannealed weights differ


def test_ratio_td_weights_remove_only_the_td_part(monkeypatch: pytest.MonkeyPatch) -> None:
    """``ratio_td``: drawn ∝ ratio·|TD|, weighted q/p against the ratio-only draw q ∝ ratio."""
    model = _filled("ratio_td")
    buffer = model.replay_buffer
    rng = np.random.default_rng(1)
    buffer.scores[: len(buffer.scores)] = rng.uniform(0.2, 3.0, buffer.scores.shape).astype(buffer.scores.dtype)
    td = rng.uniform(0.05, 2.0, buffer.scores.size)
    batch, pool = _draw_with_td(model, td, monkeypatch)
    ratio = buffer.scores.reshape(-1)[pool].astype(np.float64)
    p = ratio * td[pool] / np.sum(ratio * td[pool])
    q = ratio / ratio.sum()
    positions = [int(np.flatnonzero(pool == i)[0]) for i in batch.indices]
    np.testing.assert_allclose(batch.raw_weights, q[positions] / p[positions], rtol=1e-4)
    np.testing.assert_allclose(batch.weights.cpu().numpy().reshape(-1), batch.raw_weights, rtol=1e-5)
    laber = 1.0 / (len(pool) * p[positions])  # twin: LaBER's weight undoes the ratio too
    assert not np.allclose(batch.raw_weights, laber, rtol=1e-2)


def test_age_of_draws_is_the_drawn_share_of_task_zero() -> None:
    kwargs = {**KNOBS, **SMALL, "learning_starts": 200, "train_freq": 50, "gradient_steps": 2}
    model = TriageDQN("MlpPolicy", _env(), seed=0, selection="laber", contribution="laber", **kwargs)
    buffer = model.replay_buffer
    drawn = []
    original = ComplementaryDQN._draw_batch

    def spy(self, batch_size):
        batch = original(self, batch_size)
        drawn.append(buffer.task_ids.reshape(-1)[batch.indices])
        return batch

    ComplementaryDQN._draw_batch = spy
    try:
        model.learn(800)
    finally:
        ComplementaryDQN._draw_batch = original
    diagnostics = model.replay_diagnostics()
    expected = np.mean([np.mean(ids == 0) for ids in drawn])
    assert diagnostics["draw_share_task0"] == pytest.approx(expected)
    task_ids = buffer.task_ids.reshape(-1)[buffer.valid_indices()]
    assert diagnostics["data_share_task0"] == pytest.approx(np.mean(task_ids == 0))
    assert 0 < diagnostics["data_share_task0"] < 1  # both tasks are stored: the twin of a constant
    assert 0 < expected < 1


def test_laber_selection_is_the_library_draw() -> None:
    """``laber-fixed`` logs the age of its draws without changing them: same parameters as ComplementaryDQN."""
    kwargs = {**KNOBS, **SMALL, "train_freq": 16, "gradient_steps": 4}
    library = ComplementaryDQN("MlpPolicy", _env(), seed=3, contribution="laber", **kwargs).learn(600)
    triage = TriageDQN("MlpPolicy", _env(), seed=3, selection="laber", contribution="laber", **kwargs).learn(600)
    assert all(th.equal(a, b) for a, b in zip(library.policy.parameters(), triage.policy.parameters(), strict=True))
    rank = TriageDQN("MlpPolicy", _env(), seed=3, selection="rank", contribution="laber", **kwargs).learn(600)
    assert not all(th.equal(a, b) for a, b in zip(library.policy.parameters(), rank.policy.parameters(), strict=True))


def test_bad_selection_names_the_culprit() -> None:
    with pytest.raises(ValueError, match="selection must be one of"):
        TriageDQN("MlpPolicy", _env(), selection="rnak")
    with pytest.raises(ValueError, match="contribution='density_ratio'"):
        TriageDQN("MlpPolicy", _env(), selection="ratio_td", contribution="laber")
