"""Per-transition features: the experience extractor's input (docs/design.md, "Features")."""

from typing import Any

import numpy as np
from gymnasium import spaces

#: Names of the scalar feature columns, in matrix order (action and observation columns follow).
SCALAR_FEATURES = (
    "reward",
    "terminal",
    "timeout",
    "td_abs",
    "log_td_staleness",
    "log_age",
    "log_sample_count",
    "episode_return",
    "log_episode_position",
    "task_id",
)

#: Flat Box observations up to this many dimensions may be appended to the features.
MAX_OBSERVATION_FEATURES = 32


def action_feature_dim(action_space: spaces.Space) -> int:
    """Width of the action block: one-hot for ``Discrete``/``MultiDiscrete``, raw for ``Box``/``MultiBinary``."""
    if isinstance(action_space, spaces.Discrete):
        return int(action_space.n)
    if isinstance(action_space, spaces.MultiDiscrete):
        return int(np.sum(action_space.nvec))
    if isinstance(action_space, (spaces.Box, spaces.MultiBinary)):
        return int(np.prod(action_space.shape))
    raise ValueError(f"Unsupported action space for complementary replay features: {action_space}")


def observation_feature_dim(observation_space: spaces.Space) -> int:
    """Width of the optional raw-observation block; raises for spaces where raw inputs make no sense (images, dicts)."""
    if (
        isinstance(observation_space, spaces.Box)
        and len(observation_space.shape) == 1
        and observation_space.shape[0] <= MAX_OBSERVATION_FEATURES
    ):
        return int(observation_space.shape[0])
    raise ValueError(
        "include_observation=True needs a flat Box observation space with at most "
        f"{MAX_OBSERVATION_FEATURES} dimensions, got {observation_space}"
    )


#: Columns of the stored table (the matrix columns are derived from them at read time).
_STORED = (
    "reward",
    "terminal",
    "timeout",
    "td_abs",
    "td_step",
    "insert_step",
    "sample_count",
    "episode_return",
    "episode_position",
    "task_id",
)
_COL = {name: i for i, name in enumerate(_STORED)}


class TransitionFeatures:
    """
    Cheap, observation-independent statistics of every stored transition.

    All columns live in one ``float32`` table of shape ``(buffer_size, n_envs, n_stored)``, laid
    out like SB3's replay storage, so the flat index ``pos * n_envs + env`` used by the sum tree
    addresses a row after ``reshape(-1, n_stored)``, and building the features of a sampled
    batch is a single gather. Named columns (``reward``, ``td_abs``, ``action``, ...) are views.
    Derived quantities (age, staleness of the TD error) are computed at read time from the
    step stamps, so nothing has to be rewritten as time passes; ``float32`` stamps are exact up
    to 2^24 rows per env and only round (by a few rows) beyond, which the log-scaled age ignores.

    Episode returns are back-filled per env when its episode ends; until then a transition
    carries the return accumulated so far, which is the best estimate available.

    :param buffer_size: Rows per env (SB3's ``buffer_size // n_envs``).
    :param n_envs: Number of parallel environments.
    :param action_space: Used for the action block of the features.
    """

    def __init__(self, buffer_size: int, n_envs: int, action_space: spaces.Space) -> None:
        self.buffer_size = buffer_size
        self.n_envs = n_envs
        self.action_space = action_space
        self.action_dim = action_feature_dim(action_space)
        self.table = np.zeros((buffer_size, n_envs, len(_STORED) + self.action_dim), dtype=np.float32)
        self.table[:, :, _COL["td_step"]] = -1
        # Per-env bookkeeping of the running episode, for the back-fill.
        self._episode_length = np.zeros(n_envs, dtype=np.int64)
        self._running_return = np.zeros(n_envs, dtype=np.float64)
        #: Returns of episodes finished since the last :meth:`pop_finished_returns`.
        self.finished_returns: list[float] = []

    def _column(self, name: str) -> np.ndarray:
        return self.table[:, :, _COL[name]]

    reward = property(lambda self: self._column("reward"))
    terminal = property(lambda self: self._column("terminal"))
    timeout = property(lambda self: self._column("timeout"))
    td_abs = property(lambda self: self._column("td_abs"))
    td_step = property(lambda self: self._column("td_step"))
    insert_step = property(lambda self: self._column("insert_step"))
    sample_count = property(lambda self: self._column("sample_count"))
    episode_return = property(lambda self: self._column("episode_return"))
    episode_position = property(lambda self: self._column("episode_position"))
    task_id = property(lambda self: self._column("task_id"))

    @property
    def action(self) -> np.ndarray:
        """``(buffer_size, n_envs, A)`` view of the action block."""
        return self.table[:, :, len(_STORED) :]

    @property
    def n_columns(self) -> int:
        return len(SCALAR_FEATURES) + self.action_dim

    def _encode_actions(self, action: np.ndarray) -> np.ndarray:
        """``(n_envs, action_dim)`` buffer actions → ``(n_envs, A)`` feature block."""
        space = self.action_space
        if isinstance(space, spaces.Discrete):
            return np.eye(int(space.n), dtype=np.float32)[action.reshape(-1).astype(np.int64) - int(space.start)]
        if isinstance(space, spaces.MultiDiscrete):
            offsets = np.concatenate([[0], np.cumsum(space.nvec)[:-1]])
            out = np.zeros((action.shape[0], int(np.sum(space.nvec))), dtype=np.float32)
            cols = action.reshape(action.shape[0], -1).astype(np.int64) + offsets
            np.put_along_axis(out, cols, 1.0, axis=1)
            return out
        if isinstance(space, spaces.Box):
            # Buffer actions of SB3 actor-critics are already scaled to [-1, 1]; clip keeps any raw Box bounded.
            return np.clip(action.reshape(action.shape[0], -1), -1.0, 1.0).astype(np.float32)
        return action.reshape(action.shape[0], -1).astype(np.float32)

    def add(
        self,
        pos: int,
        action: np.ndarray,
        reward: np.ndarray,
        done: np.ndarray,
        infos: list[dict[str, Any]],
        step: int,
    ) -> None:
        """
        Record the features of the transitions written at row ``pos`` (one per env).

        :param pos: Row SB3 is about to write.
        :param action: ``(n_envs, action_dim)`` buffer actions.
        :param reward: ``(n_envs,)`` raw rewards.
        :param done: ``(n_envs,)`` episode ends (terminal or truncated).
        :param infos: One info dict per env (``TimeLimit.truncated``, optional ``task_id``).
        :param step: Insertion counter (transitions added so far), used for age.
        """
        reward = np.asarray(reward, dtype=np.float32).reshape(self.n_envs)
        done = np.asarray(done, dtype=bool).reshape(self.n_envs)
        timeout = np.array([info.get("TimeLimit.truncated", False) for info in infos], dtype=bool)
        self._episode_length += 1
        self._running_return += reward
        row = self.table[pos]
        row[:, _COL["reward"]] = reward
        row[:, _COL["terminal"]] = done & ~timeout
        row[:, _COL["timeout"]] = timeout
        row[:, _COL["td_abs"]] = 0.0
        row[:, _COL["td_step"]] = -1
        row[:, _COL["insert_step"]] = step
        row[:, _COL["sample_count"]] = 0
        row[:, _COL["episode_return"]] = self._running_return
        row[:, _COL["episode_position"]] = self._episode_length - 1
        row[:, _COL["task_id"]] = [float(info.get("task_id", 0)) for info in infos]
        row[:, len(_STORED) :] = self._encode_actions(action)
        for env_idx in np.flatnonzero(done):
            self._backfill(int(env_idx), pos)

    def fill(self, action: np.ndarray, reward: np.ndarray, done: np.ndarray, timeout: np.ndarray) -> None:
        """
        Record rows ``0 .. n-1`` at once, oldest first, into an empty table: what ``n`` calls to
        :meth:`add` would record (episode returns back-filled, the last running episode carried
        on), without the Python loop. A migrated buffer's features are built this way.

        :param action: ``(n, n_envs, action_dim)`` buffer actions.
        :param reward: ``(n, n_envs)`` rewards.
        :param done: ``(n, n_envs)`` episode ends (terminal or truncated).
        :param timeout: ``(n, n_envs)`` time-limit truncations.
        """
        n = len(reward)
        reward = np.asarray(reward, dtype=np.float64)
        done = np.asarray(done, dtype=bool)
        timeout = np.asarray(timeout, dtype=bool)
        rows = np.arange(n)[:, None]
        # Row of the last episode end at or before each row (-1: none), per env.
        last_end = np.maximum.accumulate(np.where(done, rows, -1), axis=0)
        ended_before = np.vstack([np.full((1, self.n_envs), -1), last_end[:-1]])
        cumulative = np.cumsum(reward, axis=0)
        envs = np.arange(self.n_envs)[None, :]
        base = np.where(ended_before >= 0, cumulative[np.maximum(ended_before, 0), envs], 0.0)
        running = cumulative - base  # return so far within each row's episode
        # Row of the first episode end at or after each row (n: the episode is still running).
        next_end = np.minimum.accumulate(np.where(done, rows, n)[::-1], axis=0)[::-1]
        final = running[np.minimum(next_end, n - 1), envs]

        table = self.table[:n]
        table[:] = 0.0
        table[:, :, _COL["reward"]] = reward
        table[:, :, _COL["terminal"]] = done & ~timeout
        table[:, :, _COL["timeout"]] = timeout
        table[:, :, _COL["td_step"]] = -1
        table[:, :, _COL["insert_step"]] = rows
        table[:, :, _COL["episode_return"]] = np.where(next_end < n, final, running)
        table[:, :, _COL["episode_position"]] = rows - ended_before - 1
        table[:, :, len(_STORED) :] = self._encode_actions(action.reshape(n * self.n_envs, -1)).reshape(
            n, self.n_envs, -1
        )
        self.finished_returns.extend(running[done].tolist())
        self._episode_length = (n - 1 - last_end[-1]).astype(np.int64)
        self._running_return = np.where(last_end[-1] == n - 1, 0.0, running[-1])

    def _backfill(self, env_idx: int, last_pos: int) -> None:
        """Write the finished episode's return into all of its rows that are still in the buffer."""
        length = int(min(self._episode_length[env_idx], self.buffer_size))
        rows = (last_pos - np.arange(length)) % self.buffer_size
        final_return = self._running_return[env_idx]
        self.table[rows, env_idx, _COL["episode_return"]] = final_return
        self.finished_returns.append(float(final_return))
        self._episode_length[env_idx] = 0
        self._running_return[env_idx] = 0.0

    @property
    def running_episode_length(self) -> np.ndarray:
        """``(n_envs,)`` rows written so far by each env's unfinished episode."""
        return self._episode_length

    def pop_finished_returns(self) -> list[float]:
        """Returns of the episodes finished since the last call (for the outcome signal)."""
        returns, self.finished_returns = self.finished_returns, []
        return returns

    def record_use(self, flat_indices: np.ndarray, td_abs: np.ndarray, step: int) -> None:
        """Store the latest ``|TD|`` of sampled transitions and count the use."""
        flat = self.table.reshape(-1, self.table.shape[-1])
        flat[flat_indices, _COL["td_abs"]] = td_abs
        flat[flat_indices, _COL["td_step"]] = step
        np.add.at(flat[:, _COL["sample_count"]], flat_indices, 1)

    def matrix(
        self,
        flat_indices: np.ndarray,
        step: int,
        observations: np.ndarray | None = None,
        td_abs: np.ndarray | None = None,
    ) -> np.ndarray:
        """
        Feature matrix of some transitions, as seen at ``step``.

        :param flat_indices: ``(n,)`` flat indices ``pos * n_envs + env``.
        :param step: Current insertion counter (for age and TD staleness).
        :param observations: Optional ``(n, obs_dim)`` raw observations appended as extra columns.
        :param td_abs: Optional ``(n,)`` ``|TD|`` measured now, in place of the stored one (staleness 0).
        :return: ``(n, n_columns [+ obs_dim])`` float32 matrix; unnormalised, the extractor normalises it.
        """
        rows = self.table.reshape(-1, self.table.shape[-1])[flat_indices]  # one gather: (n, n_stored + A)
        insert = rows[:, _COL["insert_step"]]
        td_step = rows[:, _COL["td_step"]]
        staleness = np.where(td_step >= 0, step - td_step, step - insert)
        out = np.empty((len(flat_indices), self.n_columns), dtype=np.float32)
        out[:, :4] = rows[:, :4]  # reward, terminal, timeout, td_abs
        out[:, 4] = np.log1p(np.maximum(staleness, 0))
        if td_abs is not None:
            out[:, 3] = td_abs
            out[:, 4] = 0.0
        out[:, 5] = np.log1p(np.maximum(step - insert, 0))
        out[:, 6] = np.log1p(rows[:, _COL["sample_count"]])
        out[:, 7] = rows[:, _COL["episode_return"]]
        out[:, 8] = np.log1p(rows[:, _COL["episode_position"]])
        out[:, 9] = rows[:, _COL["task_id"]]
        out[:, len(SCALAR_FEATURES) :] = rows[:, len(_STORED) :]
        if observations is None:
            return out
        return np.concatenate([out, observations.reshape(len(flat_indices), -1).astype(np.float32)], axis=1)
