"""n-step returns gathered from the weighted buffer's storage, as SB3's ``NStepReplayBuffer`` computes them."""

from typing import Any

import numpy as np
from stable_baselines3.common.vec_env import VecNormalize


def n_step_targets(
    buffer: Any, rows: np.ndarray, envs: np.ndarray, env: VecNormalize | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """
    n-step return, last row, done flag and bootstrap discount, as SB3's ``NStepReplayBuffer``.

    :param buffer: The replay buffer (a ``ComplementaryReplayBuffer`` with ``n_steps > 1``).
    :param rows: ``(n,)`` rows of the first transitions.
    :param envs: ``(n,)`` their envs.
    :param env: VecNormalize wrapper, to normalise the rewards as SB3 does.
    :return: ``last_rows (n,)``, ``returns (n, 1)``, ``dones (n, 1)``, ``discounts (n, 1)``.
    """
    # The freshest row is followed by stale data: it counts as truncated (a query: nothing is written).
    last_valid = (buffer.pos - 1) % buffer.buffer_size

    def timeouts_at(at_rows: np.ndarray, at_envs: np.ndarray) -> np.ndarray:
        stale_next = (at_rows == last_valid) & np.logical_not(buffer.dones[at_rows, at_envs])
        return np.logical_or(buffer.timeouts[at_rows, at_envs], stale_next).astype(buffer.timeouts.dtype)

    steps = np.arange(buffer.n_steps)
    seq = (rows[:, None] + steps) % buffer.buffer_size  # (n, n_steps)
    rewards = buffer._normalize_reward(buffer.rewards[seq, envs[:, None]], env)
    ended = np.logical_or(buffer.dones[seq, envs[:, None]], timeouts_at(seq, envs[:, None]))
    end = np.where(ended.any(axis=1), ended.argmax(axis=1), buffer.n_steps - 1)
    mask = steps[None, :] <= end[:, None]
    discounts = buffer.gamma ** mask.sum(axis=1, keepdims=True).astype(np.float32)  # float32, as SB3
    returns = (rewards * (buffer.gamma ** steps.astype(np.float32)) * mask).sum(axis=1, keepdims=True)
    last_rows = (rows + end) % buffer.buffer_size
    dones = (buffer.dones[last_rows, envs] * (1.0 - timeouts_at(last_rows, envs)))[:, None]
    return last_rows, returns.astype(np.float32), dones.astype(np.float32), discounts
