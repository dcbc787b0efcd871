"""
How hard the replay selects, learned from the agent's measured progress: an Exp3.S bandit over
selection strengths (the pool's priority exponent ``alpha``), rewarded by the change of the
episodic return that follows a window of training under each strength.

Why a bandit over strengths, and not a network over candidates: the studies found that per-sample
quantities are either measured fresh (|TD|) or do not matter (recency), while the *amount* of
selection decides the sign of the effect (it helps after a task change, and harms where large |TD|
outliers dominate). A strength of 0 is a uniform pick, so uniform replay is always reachable, and
the bandit's exploration share keeps every strength in play while the task changes. Exp3.S rather
than a stochastic bandit: the best strength moves as the agent learns (Graves et al., 2017, use
it for the same reason, on learning-progress rewards). The reward is ERO's and NERS's (Zha et al.,
2019; Oh et al., 2021): the return change, a signal of the agent's progress, never of a Q-value.
"""

from __future__ import annotations

import warnings
from collections import deque

import numpy as np

#: The default strengths: uniform, half, and the fixed default's full selection.
DEFAULT_STRENGTHS = (0.0, 0.5, 1.0)


class SelectionStrengthBandit:
    """
    Exp3.S (Auer et al., 2002) over selection strengths, with rewards scaled to ``[-1, 1]`` by the
    quantiles of their recent history (Graves et al., 2017), so that the step size does not depend
    on the task's return scale.

    :param strengths: ``(K,)`` the selection strengths (priority exponents) it chooses from, >= 0.
    :param step_size: Exp3's ``eta``: how far one importance-weighted reward moves an arm's log-weight.
    :param exploration: Share of the choice that is uniform over the arms, in ``(0, 1]``.
    :param share: Exp3.S's weight sharing per update, in ``[0, 1)``: how fast it forgets, so that it
        follows a best arm that changes.
    :param history: Number of raw rewards whose 20th and 80th percentiles scale a new one.
    """

    def __init__(
        self,
        strengths: tuple[float, ...] = DEFAULT_STRENGTHS,
        step_size: float = 0.2,
        exploration: float = 0.1,
        share: float = 0.01,
        history: int = 100,
    ) -> None:
        if len(strengths) < 2 or min(strengths) < 0 or not np.all(np.isfinite(strengths)):
            raise ValueError(f"strengths: at least 2 finite values >= 0, got {strengths!r}")
        if not step_size > 0:
            raise ValueError(f"step_size: > 0, got {step_size!r}")
        if not 0 < exploration <= 1:
            raise ValueError(f"exploration: in (0, 1], got {exploration!r}")
        if not 0 <= share < 1:
            raise ValueError(f"share: in [0, 1), got {share!r}")
        if history < 2:
            raise ValueError(f"history: >= 2, got {history!r}")
        self.strengths = tuple(float(s) for s in strengths)
        self.step_size = step_size
        self.exploration = exploration
        self.share = share
        self.log_weights = np.zeros(len(strengths))
        self.raw_rewards: deque[float] = deque(maxlen=history)

    @property
    def n_arms(self) -> int:
        return len(self.strengths)

    def probabilities(self) -> np.ndarray:
        """``(K,)`` the probability of choosing each strength now."""
        w = np.exp(self.log_weights - self.log_weights.max())
        return (1.0 - self.exploration) * w / w.sum() + self.exploration / self.n_arms

    def choose(self, rng: np.random.Generator) -> int:
        """The index of the strength for the next window (does not change the bandit)."""
        return int(rng.choice(self.n_arms, p=self.probabilities()))

    def scaled_reward(self, raw: float) -> float:
        """A raw reward mapped to ``[-1, 1]`` by the 20th and 80th percentiles of the history (0 if they are equal)."""
        if not self.raw_rewards:
            return 0.0
        low, high = np.quantile(np.asarray(self.raw_rewards), [0.2, 0.8])
        if high <= low:
            return 0.0
        return float(np.clip(2.0 * (raw - low) / (high - low) - 1.0, -1.0, 1.0))

    def update(self, arm: int, raw_reward: float) -> None:
        """
        Credit ``arm`` with a raw reward (the return change after its window).

        :param arm: The index :meth:`choose` returned for that window.
        :param raw_reward: Its reward, in the task's units; non-finite rewards must be filtered by the caller.
        """
        if not 0 <= arm < self.n_arms:
            raise ValueError(f"arm: in [0, {self.n_arms}), got {arm!r}")
        self.raw_rewards.append(float(raw_reward))
        reward = self.scaled_reward(raw_reward)
        estimate = np.zeros(self.n_arms)
        estimate[arm] = reward / self.probabilities()[arm]  # importance-weighted: unbiased over the choice
        moved = self.log_weights + self.step_size * estimate
        # Exp3.S: each arm keeps (1 - share) of its weight and receives a share of the others'.
        w = np.exp(moved - moved.max())
        shared = (1.0 - self.share) * w + self.share / (self.n_arms - 1) * (w.sum() - w)
        self.log_weights = np.log(shared) - np.log(shared).max()


class WindowedReturnCredit:
    """
    The schedule around the bandit: training is cut into windows of ``window`` env steps, each
    trained under one strength; a window's credit is ``R(k+1) - R(k)``, the mean return of the
    episodes that end in the next window minus that of the episodes ending in it (ERO's reward: a
    replay policy is judged by the return change of the policy it trained).

    A window without a finished episode, on either side, credits nothing.

    :param bandit: The bandit that chooses the strengths.
    :param window: Env steps per window (all envs together), >= 1.
    :param seed: Seed of its own generator (the choice never draws from the training RNG).
    """

    def __init__(
        self, bandit: SelectionStrengthBandit, window: int, seed: int | np.random.SeedSequence | None = None
    ) -> None:
        if window < 1:
            raise ValueError(f"window: >= 1 env step, got {window!r}")
        self.bandit = bandit
        self.window = window
        self.rng = np.random.default_rng(seed)
        self.arms: list[int] = [bandit.choose(self.rng)]
        self.window_returns: list[float] = []
        self._episode_returns: list[float] = []
        self._window_end = window
        self._warned = False

    @property
    def strength(self) -> float:
        """The selection strength of the current window."""
        return self.bandit.strengths[self.arms[-1]]

    def diagnostics(self) -> dict[str, float]:
        """
        What the bandit has learned, as a query: the ``strength`` in force and ``p_strength_<s>``,
        its probability of choosing each strength ``s`` for the next window.
        """
        probabilities = self.bandit.probabilities()
        return {"strength": self.strength} | {
            f"p_strength_{s:g}": float(p) for s, p in zip(self.bandit.strengths, probabilities, strict=True)
        }

    def record_episode(self, episode_return: float) -> None:
        """An episode of the training env ended with this return (a non-finite one is dropped, with a warning once)."""
        if np.isfinite(episode_return):
            self._episode_returns.append(float(episode_return))
        elif not self._warned:
            self._warned = True
            warnings.warn(
                f"learned selection strength: an episode return of {episode_return} is not finite; it is left out "
                "of the return credit (training goes on; this warning is shown once)",
                stacklevel=2,
            )

    def step(self, num_timesteps: int) -> bool:
        """
        Close the window if ``num_timesteps`` reached its end: credit the window before it, and
        choose the next strength.

        :return: Whether a new window (and possibly a new strength) starts.
        """
        if num_timesteps < self._window_end:
            return False
        self.window_returns.append(float(np.mean(self._episode_returns)) if self._episode_returns else float("nan"))
        self._episode_returns = []
        if len(self.window_returns) >= 2:
            change = self.window_returns[-1] - self.window_returns[-2]
            if np.isfinite(change):
                self.bandit.update(self.arms[-2], change)
        self.arms.append(self.bandit.choose(self.rng))
        self._window_end = num_timesteps + self.window
        return True
