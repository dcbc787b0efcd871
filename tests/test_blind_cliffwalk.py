"""
The positive control's parts (benchmarks/blind_cliffwalk.py, benchmarks/positive_control.py): the
chain's dynamics, its true Q, and the "updates to tolerance" measure, which must be able to fail.
"""

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import positive_control as pc
from blind_cliffwalk import BlindCliffwalk, default_gamma, right_actions, true_q, value_iteration


@pytest.mark.parametrize(("n", "seed"), [(1, 0), (4, 1), (9, 2), (12, 3)])
def test_true_q_matches_value_iteration(n: int, seed: int) -> None:
    """The closed form ``gamma ** (n - 1 - i)`` is the fixed point of the Bellman optimality operator."""
    right = right_actions(n, seed)
    gamma = default_gamma(n)
    np.testing.assert_allclose(true_q(n, right, gamma), value_iteration(n, right, gamma), atol=1e-10)


def test_dynamics() -> None:
    """Right moves on with 0, wrong ends with 0, right at the end ends with 1; one-hot observations."""
    n = 5
    env = BlindCliffwalk(n, seed=3)
    obs, _ = env.reset()
    assert obs.dtype == np.float32 and env.observation_space.contains(obs)
    np.testing.assert_array_equal(obs, np.eye(n, dtype=np.float32)[0])
    for i in range(n - 1):
        obs, reward, terminated, truncated, _ = env.step(int(env.right[i]))
        assert (reward, terminated, truncated) == (0.0, False, False)
        np.testing.assert_array_equal(obs, np.eye(n, dtype=np.float32)[i + 1])
    obs, reward, terminated, _, _ = env.step(int(env.right[n - 1]))
    assert (reward, terminated) == (1.0, True)
    assert env.observation_space.contains(obs)
    for i in range(n):  # the wrong action ends the episode with nothing, in every state
        env.reset()
        for j in range(i):
            env.step(int(env.right[j]))
        _, reward, terminated, _, _ = env.step(1 - int(env.right[i]))
        assert (reward, terminated) == (0.0, True)


def test_right_actions_depend_on_seed() -> None:
    assert not np.array_equal(right_actions(16, 0), right_actions(16, 1))
    np.testing.assert_array_equal(BlindCliffwalk(16, 5).right, right_actions(16, 5))


def _prefilled(contender: str, n: int = 4, seed: int = 0):
    env = BlindCliffwalk(n, seed)
    model = pc.build_model(contender, env, n, seed)
    pc.prefill(model, env, n, seed, contender)
    return env, model


def test_table_starts_at_zero_and_prefill_has_a_reward() -> None:
    _, model = _prefilled("per")
    np.testing.assert_array_equal(model.q_net.q_net[0].weight.detach().numpy(), 0.0)
    assert not model.q_net.q_net[0].bias.requires_grad
    buffer = model.replay_buffer
    assert buffer.size() >= pc.PREFILL_FACTOR * 2**4
    assert (buffer.rewards[: buffer.size()] > 0.5).any()


def test_a_learner_that_never_updates_hits_the_cap() -> None:
    """The twin: with ``train`` a no-op the table stays at 0, so the measure must report None at the cap."""
    n = 4
    env, model = _prefilled("dqn", n)
    model.train = lambda gradient_steps, batch_size: None
    q = true_q(n, env.right, default_gamma(n))
    counter = pc.DrawCounter()
    updates, mse = pc.learn_to_tolerance(model, q, 1, 50, counter, (int(env.right[-1]), n - 1))
    assert updates is None
    assert mse == pytest.approx(float((q**2).mean()))


def test_the_true_table_needs_no_update_and_learners_reach_it() -> None:
    """The measure is 0 at the true Q, and DQN and PER on a short chain get there before the cap."""
    n = 4
    for contender in ("dqn", "per"):
        env, model = _prefilled(contender, n)
        q = true_q(n, env.right, default_gamma(n))
        counter = pc.DrawCounter()
        counter.attach(model)
        updates, mse = pc.learn_to_tolerance(model, q, 32, 5000, counter, (int(env.right[-1]), n - 1))
        assert updates is not None and 0 < updates < 5000 and mse < pc.TOLERANCE
        assert counter.counts["unlearned"]["slots"] + counter.counts["learned"]["slots"] == 32 * updates
    weight = model.q_net.q_net[0].weight
    weight.data.copy_(pc.th.as_tensor(q.T, dtype=weight.dtype))
    assert pc.learn_to_tolerance(model, q, 32, 10, pc.DrawCounter(), (int(env.right[-1]), n - 1))[0] == 0


def test_fresh_priorities_are_the_models_own_td() -> None:
    """``per_fresh``'s NumPy re-score gives every stored transition the |TD| the model itself measures."""
    n = 4
    _, model = _prefilled("per_fresh", n)
    model.q_net.q_net[0].weight.data.uniform_(0.0, 1.0)
    model.q_net_target.q_net[0].weight.data.copy_(model.q_net.q_net[0].weight.data)
    fresh = pc.FreshPriorities(model, default_gamma(n))
    fresh()
    buffer = model.replay_buffer
    indices = buffer.valid_indices()
    expected = model._current_td_abs(buffer.get_samples_at(indices))
    np.testing.assert_allclose(buffer.scores[indices], expected, rtol=1e-5, atol=1e-6)
