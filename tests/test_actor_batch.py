"""
``actor_batch`` of the actor-critic family: with ``"uniform"`` the actor learns from a uniform batch
of its own and the critic alone from the selection (LA3P's split); ``"shared"``, the default, is the
parent's update (the drop-in tests compare it with SB3's, bit for bit).
"""

import inspect

import numpy as np
import pytest
import torch as th

from tests.algorithms import ACTOR_CRITIC, SPECS, build, critic_optimizer, fixed_batch

BATCH = 16
STEPS = 4


def actor_gradients(name: str, actor_batch: str, critic_rows: np.ndarray, monkeypatch) -> tuple[list, int]:
    """
    One ``train()`` call whose critic batch is the fixed ``critic_rows``, with the critic's optimizer
    step switched off (the critic never moves), from the same model, NumPy and torch state.

    :return: the actor's gradients at each actor update, and how many uniform batches were drawn.
    """
    model = build(name, seed=0, learning_starts=10_000, actor_batch=actor_batch)
    model.learn(150)  # collect only
    draw = fixed_batch(model, np.ones(BATCH, dtype=np.float32), indices=critic_rows)
    monkeypatch.setattr(model, "_draw_batch", lambda batch_size: draw(batch_size, model._vec_normalize_env))
    monkeypatch.setattr(critic_optimizer(model), "step", lambda *a, **k: None)
    uniform_draws = []
    sample = model.replay_buffer.sample
    monkeypatch.setattr(model.replay_buffer, "sample", lambda *a, **k: uniform_draws.append(1) or sample(*a, **k))
    grads = []
    actor_step = model.actor.optimizer.step

    def record_then_step(*args, **kwargs):
        grads.append([p.grad.clone() for p in model.actor.parameters() if p.grad is not None])
        return actor_step(*args, **kwargs)

    monkeypatch.setattr(model.actor.optimizer, "step", record_then_step)
    np.random.seed(0)
    th.manual_seed(0)
    model.train(gradient_steps=STEPS, batch_size=BATCH)
    return grads, len(uniform_draws)


def same(a: list, b: list) -> bool:
    return len(a) == len(b) and all(th.equal(x, y) for x, y in zip(a, b, strict=True))


@pytest.mark.parametrize("name", ACTOR_CRITIC)
def test_uniform_actor_batch_is_drawn_once_per_actor_update(name, monkeypatch):
    rows = np.arange(BATCH) * 3
    shared, shared_draws = actor_gradients(name, "shared", rows, monkeypatch)
    uniform, uniform_draws = actor_gradients(name, "uniform", rows, monkeypatch)
    assert shared, "the actor was never updated"
    assert shared_draws == 0  # the parent's update draws nothing more
    assert uniform_draws == len(uniform) == len(shared)
    assert not same(shared[0], uniform[0])  # the actor learnt from other rows


# CrossQ's critic normalises with the batch statistics of its joint pass over the critic's batch,
# which the actor's loss reads: its actor sees the critic's batch through them, by design.
@pytest.mark.parametrize("name", [n for n in ACTOR_CRITIC if "CrossQ" not in n])
def test_uniform_actor_batch_does_not_see_the_selection(name, monkeypatch):
    """The critic's batch changes; with ``"uniform"`` the actor's gradients do not, with ``"shared"`` they do."""
    rows_a, rows_b = np.arange(BATCH) * 3, np.arange(BATCH) * 3 + 1
    uniform_a, _ = actor_gradients(name, "uniform", rows_a, monkeypatch)
    uniform_b, _ = actor_gradients(name, "uniform", rows_b, monkeypatch)
    shared_a, _ = actor_gradients(name, "shared", rows_a, monkeypatch)
    shared_b, _ = actor_gradients(name, "shared", rows_b, monkeypatch)
    assert same(uniform_a[0], uniform_b[0])
    assert not same(shared_a[0], shared_b[0])


@pytest.mark.parametrize("name", ACTOR_CRITIC)
def test_actor_batch_is_a_checked_keyword_that_is_saved(name, tmp_path):
    cls = SPECS[name].cls
    param = inspect.signature(cls).parameters["actor_batch"]
    assert param.default == "shared" and param.kind is param.KEYWORD_ONLY
    with pytest.raises(ValueError, match=r"actor_batch must be one of \['shared', 'uniform'\], got 'critic'"):
        build(name, actor_batch="critic")
    model = build(name, actor_batch="uniform")
    model.save(tmp_path / "model")
    assert cls.load(tmp_path / "model").actor_batch == "uniform"
