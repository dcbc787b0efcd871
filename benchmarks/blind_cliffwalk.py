"""
Blind Cliffwalk (Schaul et al., ICLR 2016, "Prioritized Experience Replay", Figure 1): the chain
where one rare transition carries all the reward, so replaying it first is worth exponentially
many uniform draws. It is the positive control of the replay benchmark (issue 45): the one
setting where prioritized replay is known to help.

The chain has ``n`` states and two actions. In state ``i`` one action ("right", drawn per state
from ``seed``, so no generalisation across states can guess it) moves to state ``i + 1`` with
reward 0; the other ends the episode with reward 0. The right action in the last state ends the
episode with reward 1. Observations are one-hot vectors of size ``n`` (float32); the observation
returned at the end of an episode is all zeros (the terminal flag masks it out of every TD target).

The discount is ``gamma = 1 - 1/n`` (the paper's choice), so the true values are
``Q(i, right) = gamma ** (n - 1 - i)`` and ``Q(i, wrong) = 0``: :func:`true_q` gives them in
closed form and :func:`value_iteration` by dynamic programming (the test checks they agree).
"""

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces


def default_gamma(n: int) -> float:
    """The paper's discount for a chain of ``n`` states: ``1 - 1/n``."""
    return 1.0 - 1.0 / n


def right_actions(n: int, seed: int) -> np.ndarray:
    """``(n,)`` the rewarding ("right") action of each state, 0 or 1, drawn from ``seed``."""
    return np.random.default_rng(seed).integers(0, 2, size=n)


class BlindCliffwalk(gym.Env):
    """
    The Blind Cliffwalk chain of ``n`` states (module docstring).

    :param n: Number of states, >= 1.
    :param seed: Seed of the right action of each state (not of the episodes: the dynamics are
        deterministic and every episode starts in state 0).
    """

    metadata: dict[str, Any] = {"render_modes": []}

    def __init__(self, n: int, seed: int = 0) -> None:
        if n < 1:
            raise ValueError(f"n must be >= 1, got {n}")
        self.n = n
        self.right = right_actions(n, seed)
        self.observation_space = spaces.Box(0.0, 1.0, shape=(n,), dtype=np.float32)
        self.action_space = spaces.Discrete(2)
        self.state = 0

    def _obs(self, state: int | None) -> np.ndarray:
        obs = np.zeros(self.n, dtype=np.float32)
        if state is not None:
            obs[state] = 1.0
        return obs

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        self.state = 0
        return self._obs(0), {}

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        if int(action) != self.right[self.state]:  # the cliff: the episode ends with nothing
            return self._obs(None), 0.0, True, False, {}
        if self.state == self.n - 1:  # the right action at the end: the one reward
            return self._obs(None), 1.0, True, False, {}
        self.state += 1
        return self._obs(self.state), 0.0, False, False, {}


def true_q(n: int, right: np.ndarray, gamma: float) -> np.ndarray:
    """
    ``(n, 2)`` the true action values in closed form: ``gamma ** (n - 1 - i)`` for the right
    action of state ``i`` (the reward 1 is ``n - 1 - i`` discounted steps away), 0 for the other.
    """
    q = np.zeros((n, 2))
    q[np.arange(n), right] = gamma ** (n - 1 - np.arange(n))
    return q


def value_iteration(n: int, right: np.ndarray, gamma: float, tol: float = 1e-12) -> np.ndarray:
    """
    ``(n, 2)`` the action values by value iteration on the chain's model (a check of :func:`true_q`
    that does not share its formula).
    """
    q = np.zeros((n, 2))
    while True:
        new = np.zeros_like(q)
        for i in range(n):
            for a in range(2):
                if a != right[i]:
                    new[i, a] = 0.0  # terminal, reward 0
                elif i == n - 1:
                    new[i, a] = 1.0  # terminal, reward 1
                else:
                    new[i, a] = gamma * q[i + 1].max()
        if np.abs(new - q).max() < tol:
            return new
        q = new
