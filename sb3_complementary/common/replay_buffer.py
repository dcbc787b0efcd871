"""
The weighted replay buffer: SB3's ``ReplayBuffer`` whose draws follow a score per transition.

A transition's life here: :meth:`~ComplementaryReplayBuffer.add` stores it with its initial
score; a draw picks a batch from a uniform candidate pool by scores measured now
(:meth:`~ComplementaryReplayBuffer.select_from_candidates`, the default) or from the sum tree by
the stored scores (``sample_weighted``, :mod:`.tree_draw`), with IS weights. Users import the
buffers from :mod:`sb3_complementary.common.buffers`, which adds the Dict and n-step variants.
"""

import warnings
from typing import Any

import numpy as np
import torch as th
from gymnasium import spaces
from stable_baselines3.common.buffers import ReplayBuffer
from stable_baselines3.common.type_aliases import DictReplayBufferSamples, ReplayBufferSamples
from stable_baselines3.common.vec_env import VecNormalize

from sb3_complementary.common.buffer_diagnostics import ReplayDiagnosticsMixin
from sb3_complementary.common.extractor import action_feature_dim, ratio_inputs
from sb3_complementary.common.migration import load_rows
from sb3_complementary.common.n_step import n_step_targets
from sb3_complementary.common.samples import Samples, WeightedSamples
from sb3_complementary.common.sum_tree import SumTree
from sb3_complementary.common.tree_draw import TreeDrawMixin
from sb3_complementary.common.validation import check_choice, check_range, check_replay_knobs

INITIAL_SCORES = ("max", "neutral")
#: Score given to new transitions with ``initial_score="neutral"`` unless the algorithm sets another.
NEUTRAL_SCORE = 0.5


def _check_finite(step: int, **arrays: Any) -> None:
    """Raise a ``ValueError`` naming the first array (or Dict key) with a NaN or an infinity."""
    for name, value in arrays.items():
        parts = value.items() if isinstance(value, dict) else [(None, value)]
        for key, part in parts:
            part = np.asarray(part)
            if part.dtype.kind == "f" and not np.isfinite(part).all():  # once per step: kept cheap
                where = name if key is None else f"{name}[{key!r}]"
                raise ValueError(
                    f"Non-finite {where} from the env at transition {step} ({part.tolist()}): the replay "
                    "refuses it, as it would poison TD targets and priorities. Wrap the env in SB3's "
                    "VecCheckNan to find where it comes from."
                )


def take_rows(samples: Samples, rows: np.ndarray) -> Samples:
    """The rows ``rows`` (``(n,)`` positions, repeats allowed) of every field of some SB3 samples."""
    index: th.Tensor | None = None

    def take(field: Any) -> Any:
        nonlocal index
        if field is None:
            return None
        if isinstance(field, dict):
            return {key: take(value) for key, value in field.items()}
        if index is None:
            index = th.as_tensor(rows, device=field.device)
        return field[index]

    return type(samples)(*(take(field) for field in samples))


class ComplementaryReplayBuffer(TreeDrawMixin, ReplayDiagnosticsMixin, ReplayBuffer):
    """
    SB3 ``ReplayBuffer`` that samples transitions proportionally to ``(score + epsilon) ** alpha``.

    One sum-tree leaf per stored transition, across all envs (flat index ``pos * n_envs + env``).
    A share ``uniform_fraction`` of every batch is drawn uniformly (as SB3 would, same RNG calls),
    which guards against feedback loops and serves as the control group; importance-sampling
    weights ``(N * P(i)) ** -beta`` are computed against the resulting mixture distribution.

    Who sets the scores is up to the algorithm: ``PrioritizedDQN`` writes ``|TD|`` (classic
    PER), ``ComplementaryDQN`` writes the experience extractor's density ratios. Beside SB3's
    storage the buffer keeps, per transition, what SB3 does not store: the terminal flag
    (``terminals``, termination without truncation) and the task id (``task_ids``).

    :param buffer_size: Max number of transitions (over all envs), as in SB3.
    :param observation_space: Observation space.
    :param action_space: Action space.
    :param device: PyTorch device.
    :param n_envs: Number of parallel environments.
    :param optimize_memory_usage: SB3's memory-efficient layout (``next_obs`` shares storage).
    :param handle_timeout_termination: Treat time-limit truncation as non-terminal, as in SB3.
    :param n_steps: n-step returns when > 1 (as SB3's ``NStepReplayBuffer``).
    :param gamma: Discount for n-step returns.
    :param alpha: Priority exponent, >= 0 (0 = uniform).
    :param beta: IS exponent in [0, 1]; the algorithm sets ``self.beta`` at every ``train()`` call.
    :param epsilon: Added to scores so no valid transition has zero probability, >= 0.
    :param uniform_fraction: Share of each batch drawn uniformly, in [0, 1].
    :param score_floor: Scores are clipped from below to this value, >= 0 (also the fallback for NaN scores).
    :param initial_score: Score of a new transition: ``"max"`` (highest score so far, so it is
        replayed soon, as in PER) or ``"neutral"`` (``neutral_score``, which the algorithm sets:
        the scorer's "don't know").
    """

    observations: Any
    next_observations: Any

    def __init__(
        self,
        buffer_size: int,
        observation_space: spaces.Space,
        action_space: spaces.Space,
        device: th.device | str = "auto",
        n_envs: int = 1,
        optimize_memory_usage: bool = False,
        handle_timeout_termination: bool = True,
        n_steps: int = 1,
        gamma: float = 0.99,
        alpha: float = 0.6,
        beta: float = 0.4,
        epsilon: float = 1e-6,
        uniform_fraction: float = 0.0,
        score_floor: float = 0.0,
        initial_score: str = "max",
    ) -> None:
        check_replay_knobs(alpha, epsilon, uniform_fraction, score_floor, beta=beta)
        check_range("n_steps", n_steps, low=1)
        check_choice("initial_score", initial_score, INITIAL_SCORES)
        action_feature_dim(action_space)  # fails early, naming the space, if the extractor cannot encode it
        if n_steps > 1 and optimize_memory_usage:
            raise ValueError(
                "n_steps > 1 is not supported with optimize_memory_usage=True (as in SB3's NStepReplayBuffer)"
            )
        super().__init__(
            buffer_size,
            observation_space,
            action_space,
            device=device,
            n_envs=n_envs,
            optimize_memory_usage=optimize_memory_usage,
            handle_timeout_termination=handle_timeout_termination,
        )
        self.n_steps = n_steps
        self.gamma = gamma
        self.alpha = alpha
        self.beta = beta
        self.epsilon = epsilon
        self.uniform_fraction = uniform_fraction
        self.score_floor = score_floor
        self.initial_score = initial_score

        self.tree = SumTree(self.buffer_size * self.n_envs)
        self.scores = np.zeros(self.buffer_size * self.n_envs, dtype=np.float32)
        self.max_score = 1.0
        #: Score of a new transition with ``initial_score="neutral"``: the scorer's "don't know"
        #: (the density ratio sets 1, the mean ratio).
        self.neutral_score = NEUTRAL_SCORE
        #: ``(buffer_size, n_envs)`` 1.0 where the episode terminated (not truncated) at the transition.
        self.terminals = np.zeros((self.buffer_size, self.n_envs), dtype=np.float32)
        #: ``(buffer_size, n_envs)`` ``info["task_id"]`` of each transition (0 in a single-task run).
        self.task_ids = np.zeros((self.buffer_size, self.n_envs), dtype=np.float32)
        #: Dict keys left out of the extractor's inputs (HER: ``desired_goal``).
        self.ratio_excluded_keys: tuple[str, ...] = ()
        #: Rows added so far (one row = one transition per env).
        self.n_added = 0
        self._unscored_rows: list[int] = []

    # ------------------------------------------------------------------ storage
    def add(
        self,
        obs: Any,
        next_obs: Any,
        action: np.ndarray,
        reward: np.ndarray,
        done: np.ndarray,
        infos: list[dict[str, Any]],
    ) -> None:
        """
        SB3's ``add``, plus the terminal flag and task id. A non-finite reward or observation raises a
        ``ValueError`` before anything is written: it would poison the TD targets, the scores and
        the sum tree (SB3's ``VecCheckNan`` wrapper finds where it comes from).
        """
        _check_finite(self.n_added, reward=reward, obs=obs, next_obs=next_obs)
        pos = self.pos
        timeout = np.array([info.get("TimeLimit.truncated", False) for info in infos], dtype=bool)
        self.terminals[pos] = np.asarray(done, dtype=bool).reshape(self.n_envs) & ~timeout
        self.task_ids[pos] = [float(info.get("task_id", 0)) for info in infos]
        super().add(obs, next_obs, action, reward, done, infos)
        self.n_added += 1
        # The score array is current at once (a reader never sees the score of the row this one
        # overwrote); only the tree update waits for the next draw (_flush_new).
        self.scores[pos * self.n_envs : (pos + 1) * self.n_envs] = self._initial_score()  # row pos, every env
        self._unscored_rows.append(pos)
        if len(self._unscored_rows) >= 4096:  # bound the backlog when nothing samples for a long time
            self._flush_new()

    def load_rows(self, old: ReplayBuffer) -> None:
        """Fill this empty buffer with the transitions of a plain SB3 buffer: :func:`.migration.load_rows`."""
        load_rows(self, old)

    def _initial_score(self) -> float:
        return self.max_score if self.initial_score == "max" else self.neutral_score

    def priority(self, scores: np.ndarray | float) -> np.ndarray:
        """
        Sampling priority ``(max(score, floor) + epsilon) ** alpha`` of scores, in float64 and
        clipped so that the tree's sum over every leaf stays finite (a huge score raised to a
        large ``alpha`` would otherwise overflow to inf).
        """
        base = np.maximum(np.asarray(scores, dtype=np.float64), self.score_floor) + self.epsilon
        with np.errstate(over="ignore"):
            return np.minimum(base**self.alpha, np.finfo(np.float64).max / (2 * self.tree.n_leaves))

    def row_indices(self, rows: np.ndarray | list[int]) -> np.ndarray:
        """``(len(rows) * n_envs,)`` flat indices of every env's transition in the given rows."""
        return (np.asarray(rows, dtype=np.int64)[:, None] * self.n_envs + np.arange(self.n_envs)).reshape(-1)

    def valid_indices(self) -> np.ndarray:
        """Flat indices of every sampleable transition."""
        indices = np.arange(self.size() * self.n_envs)
        if self.optimize_memory_usage and self.full:
            indices = indices[indices // self.n_envs != self.pos]
        return indices

    def n_valid(self) -> int:
        return self.size() * self.n_envs - (self.n_envs if (self.optimize_memory_usage and self.full) else 0)

    def recent_indices(self, n: int) -> np.ndarray:
        """Flat indices of (about) the ``n`` freshest transitions (the density ratio's fast memory)."""
        rows = min(max(n // self.n_envs, 1), self.size())
        pos = (self.pos - 1 - np.arange(rows)) % self.buffer_size
        return self.row_indices(pos)

    # ------------------------------------------------------------------ scores
    def _sanitize(self, scores: np.ndarray) -> np.ndarray:
        scores = np.asarray(scores, dtype=np.float32).reshape(-1)
        bad = ~np.isfinite(scores)
        if bad.any():
            warnings.warn(
                f"{int(bad.sum())} non-finite transition scores replaced by the score floor ({self.score_floor})",
                RuntimeWarning,
                stacklevel=3,
            )
            scores = np.where(bad, self.score_floor, scores)
        return np.maximum(scores, self.score_floor)

    def set_all_scores(self, indices: np.ndarray, scores: np.ndarray) -> None:
        """
        Replace every score at once and rebuild the tree: ``indices`` get ``scores``, every other leaf 0.

        :param indices: ``(n_valid,)`` flat indices of every valid transition (``valid_indices()``).
        :param scores: ``(n_valid,)`` their new scores (non-finite ones fall back to the floor, with a warning).
        """
        self._unscored_rows = []  # every row gets a fresh score below
        scores = self._sanitize(scores)
        self.scores[:] = 0.0
        self.scores[indices] = scores
        if scores.size:
            self.max_score = float(scores.max())
        priorities = np.zeros(self.tree.capacity)
        priorities[indices] = self.priority(scores)
        self.tree.set_all(priorities)

    def ratio_inputs(self, indices: np.ndarray) -> np.ndarray:
        """``(n, ratio_input_dim)`` the extractor's input of some transitions: :func:`.extractor.ratio_inputs`."""
        return ratio_inputs(self, indices)

    @property
    def ratio_input_dim(self) -> int:
        """Width of :meth:`ratio_inputs`."""
        return int(self.ratio_inputs(np.zeros(1, dtype=np.int64)).shape[1])

    # ------------------------------------------------------------------ sampling
    def _uniform_rows(self, n: int) -> np.ndarray:
        """Rows drawn exactly as SB3's uniform ``sample`` draws them (same RNG calls)."""
        if self.optimize_memory_usage and self.full:
            return (np.random.randint(1, self.buffer_size, size=n) + self.pos) % self.buffer_size
        upper_bound = self.buffer_size if self.full else self.pos
        return np.random.randint(0, upper_bound, size=n)

    def uniform_indices(self, n: int) -> np.ndarray:
        """``(n,)`` flat indices drawn uniformly from the valid transitions, as SB3's ``sample`` draws them."""
        rows = self._uniform_rows(n)
        envs = np.random.randint(0, self.n_envs, size=n)
        return rows * self.n_envs + envs

    def _gather(
        self, indices: np.ndarray, control: np.ndarray, env: VecNormalize | None
    ) -> tuple[Samples, np.ndarray | slice]:
        """
        The samples of drawn transitions, and where each row comes from: row ``k`` is transition
        ``indices[order][k]`` (here the draw order; a HER buffer relabels and reorders).
        """
        return self.get_samples_at(indices, env), slice(None)

    def gather_pool(self, candidates: np.ndarray, env: VecNormalize | None = None) -> tuple[Samples, np.ndarray]:
        """
        The samples of a draw-time selection's candidate pool, gathered as a uniform batch is
        (a HER buffer relabels its share of them, as SB3's HER relabels a batch).

        :param candidates: ``(P,)`` flat indices, drawn uniformly.
        :param env: VecNormalize wrapper, to normalise observations/rewards as SB3 does.
        :return: The samples (``P`` rows), and ``(P,)`` the flat index of each row's stored transition.
        """
        samples, order = self._gather(candidates, np.ones(len(candidates), dtype=bool), env)
        return samples, candidates[order]

    def select_from_candidates(
        self,
        candidates: np.ndarray,
        samples: Samples,
        scores: np.ndarray,
        batch_size: int,
        max_normalized: bool = True,
    ) -> tuple[WeightedSamples, np.ndarray]:
        """
        Draw a batch from a pool of uniformly drawn candidates, by scores measured now (draw-time selection).

        A share ``uniform_fraction`` of the slots picks uniformly from the pool (the control
        group), the rest by priority ``(score + epsilon) ** alpha``, with replacement. The pool
        itself was drawn uniformly from the buffer, so a candidate that one slot picks with
        probability ``q_i`` is replayed about ``P * q_i`` times as often as under uniform
        replay: its IS weight is ``(P * q_i) ** -beta``.

        :param candidates: ``(P,)`` flat indices of the pool.
        :param samples: The pool's SB3 samples (``P`` rows, in the order of ``candidates``).
        :param scores: ``(P,)`` the candidates' scores.
        :param batch_size: Number of transitions to select.
        :param max_normalized: Divide the IS weights by their batch maximum (PER's rule); False keeps
            ``(P * q_i) ** -beta`` as it is (LaBER's ``mean(p) / p_i`` at ``beta=1``).
        :return: The batch, and ``(P,)`` each candidate's replay rate against uniform replay,
            ``P * q_i`` (1 everywhere for a uniform selection; the selection's ESS fraction is
            ``1 / mean(rate^2)``).
        """
        pool_size = len(candidates)
        n_uniform = round(batch_size * self.uniform_fraction)
        priorities = self.priority(self._sanitize(scores)).astype(np.float64)
        if priorities.sum() <= 0:  # all-zero priorities (epsilon = floor = 0): the scored share is uniform too
            priorities = np.ones(pool_size)
        score_part = priorities / priorities.sum()
        uniform_share = n_uniform / batch_size
        rates = pool_size * (uniform_share / pool_size + (1.0 - uniform_share) * score_part)
        picks = np.concatenate(
            [
                np.random.randint(0, pool_size, size=n_uniform),
                np.random.choice(pool_size, size=batch_size - n_uniform, p=score_part),
            ]
        )
        raw_weights = rates[picks] ** -self.beta
        control = np.zeros(batch_size, dtype=bool)
        control[:n_uniform] = True
        batch = WeightedSamples(
            samples=take_rows(samples, picks),
            indices=candidates[picks],
            weights=self.to_torch(
                (raw_weights / (raw_weights.max() if max_normalized else 1.0)).astype(np.float32).reshape(-1, 1)
            ),
            raw_weights=raw_weights,
            control=control,
        )
        return batch, rates

    def sample(self, batch_size: int, env: VecNormalize | None = None) -> ReplayBufferSamples:
        """SB3's contract: a uniform batch, drawn with SB3's own NumPy calls; the scores play no part."""
        return self.get_samples_at(self.uniform_indices(batch_size), env)  # type: ignore[return-value]

    # ------------------------------------------------------------------ gathering
    def _observations_at(self, storage: Any, rows: np.ndarray, envs: np.ndarray, env: VecNormalize | None) -> Any:
        if isinstance(storage, dict):
            obs = self._normalize_obs({key: value[rows, envs] for key, value in storage.items()}, env)
            return {key: self.to_torch(value) for key, value in obs.items()}  # type: ignore[union-attr]
        return self.to_torch(self._normalize_obs(storage[rows, envs], env))  # type: ignore[arg-type]

    def get_samples_at(
        self, indices: np.ndarray, env: VecNormalize | None = None
    ) -> ReplayBufferSamples | DictReplayBufferSamples:
        """
        Build SB3 samples for given flat indices (1-step, memory-optimised or n-step), by keyword
        so that fields SB3 adds later keep their defaults.

        :param indices: ``(n,)`` flat indices ``pos * n_envs + env``.
        :param env: VecNormalize wrapper, to normalise observations/rewards as SB3 does.
        """
        rows, envs = np.divmod(indices, self.n_envs)
        samples_class = DictReplayBufferSamples if isinstance(self.observations, dict) else ReplayBufferSamples
        fields: dict[str, Any] = {
            "observations": self._observations_at(self.observations, rows, envs, env),
            "actions": self.to_torch(self.actions[rows, envs]),
        }
        if self.n_steps > 1:
            next_rows, returns, dones, discounts = n_step_targets(self, rows, envs, env)
            fields["discounts"] = self.to_torch(discounts)
        else:
            next_rows = rows
            returns = self._normalize_reward(self.rewards[rows, envs].reshape(-1, 1), env)
            dones = (self.dones[rows, envs] * (1 - self.timeouts[rows, envs])).reshape(-1, 1)
        if self.optimize_memory_usage:
            fields["next_observations"] = self._observations_at(
                self.observations, (next_rows + 1) % self.buffer_size, envs, env
            )
        else:
            fields["next_observations"] = self._observations_at(self.next_observations, next_rows, envs, env)
        fields["dones"] = self.to_torch(dones)
        fields["rewards"] = self.to_torch(returns)
        return samples_class(**fields)
