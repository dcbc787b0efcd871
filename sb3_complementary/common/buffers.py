"""
The weighted replay buffers: SB3's ``ReplayBuffer`` (and its Dict and n-step variants) whose draws
follow a score per transition.

A transition's life here: :meth:`~ComplementaryReplayBuffer.add` stores it with its initial score;
a draw picks a batch from a uniform candidate pool by scores measured now
(:meth:`~ComplementaryReplayBuffer.select_from_candidates`), or from the sum tree by the stored
scores (:meth:`~ComplementaryReplayBuffer.sample_weighted`, PER's draw), with IS weights; or
uniformly, as SB3 draws (:meth:`~ComplementaryReplayBuffer.sample_uniform`). The sum tree is built
the first time a draw or a score update reads it, so a buffer whose draws never read it keeps none.
"""

import warnings
from typing import Any, NamedTuple

import numpy as np
import torch as th
from gymnasium import spaces
from stable_baselines3.common.buffers import DictReplayBuffer, NStepReplayBuffer, ReplayBuffer
from stable_baselines3.common.type_aliases import DictReplayBufferSamples, ReplayBufferSamples
from stable_baselines3.common.vec_env import VecNormalize

from sb3_complementary.common.extractor import action_feature_dim, ratio_inputs
from sb3_complementary.common.sum_tree import SumTree
from sb3_complementary.common.validation import check_choice, check_range, check_replay_knobs

#: The SB3 samples of a flat or a Dict observation space.
Samples = ReplayBufferSamples | DictReplayBufferSamples


class WeightedSamples(NamedTuple):
    """
    One sampled batch plus what a weighted update and its feedback need.

    :param samples: The SB3 samples, exactly as a uniform buffer would return them.
    :param indices: ``(batch_size,)`` flat indices ``pos * n_envs + env`` of the transitions.
    :param weights: ``(batch_size, 1)`` IS weights normalised by their batch maximum, on the buffer's device.
    :param raw_weights: ``(batch_size,)`` un-normalised IS weights ``(N * P(i)) ** -beta`` (for logging).
    :param control: ``(batch_size,)`` True where the transition came from the uniform share.
    """

    samples: Samples
    indices: np.ndarray
    weights: th.Tensor
    raw_weights: np.ndarray
    control: np.ndarray

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



def _n_step_targets(
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


class ComplementaryReplayBuffer(ReplayBuffer):
    """
    SB3 ``ReplayBuffer`` that samples transitions proportionally to ``(score + epsilon) ** alpha``.

    One sum-tree leaf per stored transition, across all envs (flat index ``pos * n_envs + env``).
    A share ``uniform_fraction`` of every batch is drawn uniformly (as SB3 would, same RNG calls),
    which guards against feedback loops and serves as the control group; importance-sampling
    weights ``(N * P(i)) ** -beta`` are computed against the resulting mixture distribution.

    Who sets the scores is up to the algorithm: ``PrioritizedDQN`` writes ``|TD|`` (classic
    PER), ``ComplementaryDQN`` with ``contribution="density_ratio"`` writes the experience
    extractor's density ratios, and its default (LaBER) scores a candidate pool at draw time and
    stores nothing. The sum tree (``tree``) is None until a draw or a score update reads it. Beside SB3's
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
    :param storage_kwargs: Further arguments of the SB3 storage class below this one in the MRO
        (``HerReplayBuffer``'s ``env``, ``n_sampled_goal``, ...).
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
        **storage_kwargs: Any,
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
            **storage_kwargs,
        )
        self.n_steps = n_steps
        self.gamma = gamma
        self.alpha = alpha
        self.beta = beta
        self.epsilon = epsilon
        self.uniform_fraction = uniform_fraction
        self.score_floor = score_floor
        self.initial_score = initial_score

        #: The sum tree of the priorities, built when a draw or a score update first reads it.
        self.tree: SumTree | None = None
        #: The tree's leaf count (its capacity rounded up to a power of 2), which bounds a priority.
        self._n_leaves = SumTree.leaf_count(self.buffer_size * self.n_envs)
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
        #: Rows added since the tree last followed (only while there is a tree).
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
        if self.tree is not None:
            self._unscored_rows.append(pos)
            if len(self._unscored_rows) >= 4096:  # bound the backlog when nothing samples for a long time
                self._flush_new()


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
            return np.minimum(base**self.alpha, np.finfo(np.float64).max / (2 * self._n_leaves))

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
        Replace every score at once (and rebuild the tree, if there is one): ``indices`` get ``scores``,
        every other leaf 0.

        :param indices: ``(n_valid,)`` flat indices of every valid transition (``valid_indices()``).
        :param scores: ``(n_valid,)`` their new scores (non-finite ones fall back to the floor, with a warning).
        """
        self._unscored_rows = []  # every row gets a fresh score below
        scores = self._sanitize(scores)
        self.scores[:] = 0.0
        self.scores[indices] = scores
        if scores.size:
            self.max_score = float(scores.max())
        if self.tree is not None:
            self.tree.set_all(self._all_priorities(indices))

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

    def sample_uniform(self, batch_size: int, env: VecNormalize | None = None) -> WeightedSamples:
        """
        A uniform batch with IS weights 1, drawn and gathered call for call as SB3's ``sample``
        (a HER buffer relabels it as SB3's HER does): the draw of ``alpha=0``, where every
        priority is 1 whatever the scores.

        :param batch_size: Number of transitions.
        :param env: VecNormalize wrapper, to normalise observations/rewards as SB3 does.
        """
        ones = np.ones(batch_size)
        return self._weighted_batch(self.uniform_indices(batch_size), ones, ones, ones.astype(bool), env)

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
            next_rows, returns, dones, discounts = _n_step_targets(self, rows, envs, env)
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

    def _flush_new(self) -> None:
        """
        Give the rows added since the last flush their initial priority, in one batched tree update.

        ``add`` writes a new row's score at once; deferring the tree update to the next draw keeps
        the per-env-step cost of ``add`` at SB3's level: one tree update per rollout, not per step.
        """
        tree = self.tree
        if tree is None or not self._unscored_rows:
            return
        rows = np.unique(self._unscored_rows)
        self._unscored_rows = []
        new = self.row_indices(rows)
        initial = self._initial_score()
        self.scores[new] = initial
        tree.update(new, np.full(len(new), self.priority(initial)))
        if self.optimize_memory_usage and self.full:
            # The row at self.pos had its observation overwritten by next_obs: unsampleable until rewritten.
            tree.update(self.pos * self.n_envs + np.arange(self.n_envs), np.zeros(self.n_envs))

    def _all_priorities(self, indices: np.ndarray) -> np.ndarray:
        """``(capacity,)`` every leaf's priority from the stored scores: ``indices`` by their score, the rest 0."""
        priorities = np.zeros(self.buffer_size * self.n_envs)
        priorities[indices] = self.priority(self.scores[indices])
        return priorities

    def _require_tree(self) -> SumTree:
        """The sum tree, built from the stored scores the first time a draw or an update reads it."""
        if self.tree is None:
            self.tree = SumTree(self.buffer_size * self.n_envs)
            self.tree.set_all(self._all_priorities(self.valid_indices()))
            self._unscored_rows = []
        return self.tree

    def update_scores(self, indices: np.ndarray, scores: np.ndarray) -> None:
        """
        Set the scores of some transitions (e.g. ``|TD|`` after a PER update).

        Non-finite scores trigger a warning and fall back to ``score_floor``; the tree never
        holds a NaN or a negative value.

        :param indices: ``(n,)`` flat indices.
        :param scores: ``(n,)`` new scores.
        """
        tree = self._require_tree()
        self._flush_new()
        scores = self._sanitize(scores)
        self.scores[indices] = scores
        if scores.size:
            self.max_score = max(self.max_score, float(scores.max()))
        tree.update(indices, self.priority(scores))

    def rebuild_priorities(self) -> None:
        """
        Recompute every priority from the stored scores, the rows not yet flushed at their initial
        score: what a change of ``alpha``, ``epsilon`` or ``score_floor`` (the priority map) needs.
        Without a tree there is nothing to recompute: the next draw that reads one builds it.
        """
        if self.tree is None:
            return
        self._flush_new()
        indices = self.valid_indices()
        self.set_all_scores(indices, self.scores[indices])

    def _leaves(self) -> tuple[np.ndarray, float]:
        """
        The tree's priorities and their total, with the rows not yet flushed counted at their
        initial score: what the next draw will see, computed without writing anything (without a
        tree, from the stored scores, as the tree would be built).
        """
        if self.tree is None:
            leaves = self._all_priorities(self.valid_indices())
            return leaves, float(leaves.sum())
        if not self._unscored_rows:
            return self.tree.leaves, self.tree.total
        leaves = self.tree.leaves.copy()
        rows = np.unique(self._unscored_rows)
        leaves[self.row_indices(rows)] = self.priority(self._initial_score())
        if self.optimize_memory_usage and self.full:
            leaves[self.pos * self.n_envs + np.arange(self.n_envs)] = 0.0
        return leaves, float(leaves.sum())

    def sampling_probabilities(self, indices: np.ndarray, uniform_share: float) -> np.ndarray:
        """
        Probability that one batch slot draws each transition, under the uniform/score mixture.

        A query: it reads the scores as the next draw will see them and writes nothing.

        :param indices: ``(n,)`` flat indices of valid transitions.
        :param uniform_share: Share of the batch drawn uniformly.
        :return: ``(n,)`` probabilities ``u / N + (1 - u) * p_i / sum(p)``.
        """
        if len(indices) == 0:  # e.g. HER before the first episode ends: nothing is drawable yet
            return np.zeros(0)
        leaves, total = self._leaves()
        score_part = leaves[indices] / total if total > 0 else np.zeros(len(indices))
        return uniform_share / self.n_valid() + (1.0 - uniform_share) * score_part

    def sample_weighted(self, batch_size: int, env: VecNormalize | None = None) -> WeightedSamples:
        """
        Draw a batch: a uniform share, the rest stratified by priority, with IS weights.

        :param batch_size: Number of transitions.
        :param env: VecNormalize wrapper, to normalise observations/rewards as SB3 does.
        """
        tree = self._require_tree()
        self._flush_new()
        n_uniform = round(batch_size * self.uniform_fraction)
        if tree.total <= 0:
            n_uniform = batch_size
        uniform_indices = self.uniform_indices(n_uniform)
        scored_indices = tree.sample_stratified(np.random.random(batch_size - n_uniform))
        indices = np.concatenate([uniform_indices, scored_indices])

        probabilities = self.sampling_probabilities(indices, n_uniform / batch_size)
        raw_weights = (self.n_valid() * probabilities) ** -self.beta
        weights = raw_weights / raw_weights.max()

        control = np.zeros(batch_size, dtype=bool)
        control[:n_uniform] = True
        return self._weighted_batch(indices, weights, raw_weights, control, env)

    def _weighted_batch(
        self,
        indices: np.ndarray,
        weights: np.ndarray,
        raw_weights: np.ndarray,
        control: np.ndarray,
        env: VecNormalize | None,
    ) -> WeightedSamples:
        """
        Gather drawn transitions into one batch, every per-sample array in the order of the samples' rows.

        :param indices: ``(n,)`` flat indices, in draw order.
        :param weights: ``(n,)`` the loss weights (IS weights normalised by their batch maximum).
        :param raw_weights: ``(n,)`` the weights to log.
        :param control: ``(n,)`` True for the uniform share.
        :param env: VecNormalize wrapper, to normalise observations/rewards as SB3 does.
        """
        samples, order = self._gather(indices, control, env)
        return WeightedSamples(
            samples=samples,
            indices=indices[order],
            weights=self.to_torch(weights[order].astype(np.float32).reshape(-1, 1)),
            raw_weights=raw_weights[order],
            control=control[order],
        )

    def ess_fraction(self, indices: np.ndarray | None = None) -> float:
        """
        Effective sample size of the sampling distribution, as a fraction of the transitions:
        ``1 / (N * sum(p_i^2))``; 1 for uniform replay, near 0 when a few transitions take all draws.

        :param indices: ``(N,)`` flat indices (default: every valid transition).
        :return: The fraction; 1 for an empty buffer (nothing is prioritised yet).
        """
        indices = self.valid_indices() if indices is None else indices
        if len(indices) == 0:
            return 1.0
        probabilities = self.sampling_probabilities(indices, self.uniform_fraction)
        probabilities = probabilities / probabilities.sum()
        return float(1.0 / np.sum(probabilities**2) / len(indices))

    def replay_weights(self, indices: np.ndarray | None = None) -> np.ndarray:
        """
        ``(n,)`` ``N * P(i)`` under the uniform/score mixture: how many times as much as under
        uniform replay each transition counts (mean 1 over the buffer; 1 everywhere for uniform replay).

        :param indices: Flat indices (default: every valid transition).
        """
        indices = self.valid_indices() if indices is None else indices
        return self.n_valid() * self.sampling_probabilities(indices, self.uniform_fraction)

    def task_shares(self, indices: np.ndarray | None = None) -> dict[int, tuple[float, float]]:
        """
        Per task (``info["task_id"]`` at insertion), the share of replay draws under the
        uniform/score mixture and the share of the stored data. A task whose sampling share is far
        above its data share is favoured by the replay; one near 1 monopolises it.

        :param indices: ``(n,)`` flat indices to compare (default: every valid transition).
        :return: ``{task_id: (sample_share, data_share)}``, task ids ascending; one entry in a
            single-task run, none for an empty buffer.
        """
        indices = self.valid_indices() if indices is None else indices
        task_ids = self.task_ids.reshape(-1)[indices]
        probabilities = self.sampling_probabilities(indices, self.uniform_fraction)
        total = probabilities.sum()
        if len(task_ids) == 0 or total <= 0:
            return {}
        if task_ids.min() == task_ids.max():  # single task: skip the sort of the whole buffer
            return {int(task_ids[0]): (1.0, 1.0)}
        tasks, inverse = np.unique(task_ids, return_inverse=True)
        sample = np.bincount(inverse, weights=probabilities, minlength=len(tasks)) / total
        data = np.bincount(inverse, minlength=len(tasks)) / len(task_ids)
        return {int(t): (float(s), float(d)) for t, s, d in zip(tasks, sample, data, strict=True)}

    def overhead_bytes(self) -> int:
        """Bytes held beyond SB3's own storage: the sum tree (once built), the scores, terminal flags and task ids."""
        tree_bytes = self.tree.nbytes if self.tree is not None else 0
        return int(tree_bytes + self.scores.nbytes + self.terminals.nbytes + self.task_ids.nbytes)

    def load_rows(self, old: ReplayBuffer) -> None:
        """
        Fill this empty buffer with the transitions of a plain SB3 buffer (same shape), oldest
        first from row 0: the same data, terminal flags and initial scores as adding them one by one,
        in a few array copies (a migration of 1M rows takes seconds, not minutes).

        :param old: An SB3 ``ReplayBuffer`` or ``DictReplayBuffer`` with ``n_envs`` envs.
        """
        n = old.size()
        if n == 0:
            return
        order = (np.arange(n) + (old.pos if old.full else 0)) % old.buffer_size

        def copy(target: Any, source: Any) -> None:
            if isinstance(target, dict):
                for key in target:
                    target[key][:n] = source[key][order]
            else:
                target[:n] = source[order]

        copy(self.observations, old.observations)
        if self.optimize_memory_usage:  # next_obs of row t is row t + 1's observation, as add() writes it
            self.observations[n % self.buffer_size] = old.observations[(order[-1] + 1) % old.buffer_size]
        else:
            copy(self.next_observations, old.next_observations)
        for name in ("actions", "rewards", "dones", "timeouts"):
            getattr(self, name)[:n] = getattr(old, name)[order]
        self.terminals[:n] = np.logical_and(self.dones[:n], np.logical_not(self.timeouts[:n]))
        self.pos, self.full = n % self.buffer_size, n == self.buffer_size
        self.n_added = n
        self.scores[self.row_indices(np.arange(n))] = self._initial_score()
        self.tree = None  # rebuilt from the new scores when a draw reads it


class ComplementaryDictReplayBuffer(ComplementaryReplayBuffer, DictReplayBuffer):  # type: ignore[misc]
    """
    :class:`ComplementaryReplayBuffer` for ``Dict`` observation spaces (``MultiInputPolicy``).

    Storage and ``add`` come from SB3's ``DictReplayBuffer``; scoring, sampling and the
    n-step gather are shared with :class:`ComplementaryReplayBuffer`. Like SB3, it does not
    support ``optimize_memory_usage``.
    """

    def __init__(
        self,
        buffer_size: int,
        observation_space: spaces.Space,
        action_space: spaces.Space,
        device: th.device | str = "auto",
        n_envs: int = 1,
        optimize_memory_usage: bool = False,
        handle_timeout_termination: bool = True,
        **knobs: Any,
    ) -> None:
        if not isinstance(observation_space, spaces.Dict):
            raise ValueError(f"ComplementaryDictReplayBuffer needs a Dict observation space, got {observation_space}")
        if optimize_memory_usage:
            raise ValueError("ComplementaryDictReplayBuffer does not support optimize_memory_usage=True (as in SB3)")
        super().__init__(
            buffer_size,
            observation_space,
            action_space,
            device=device,
            n_envs=n_envs,
            handle_timeout_termination=handle_timeout_termination,
            **knobs,
        )


class ComplementaryNStepReplayBuffer(ComplementaryReplayBuffer, NStepReplayBuffer):
    """
    :class:`ComplementaryReplayBuffer` with n-step returns that is also an SB3 ``NStepReplayBuffer``,
    so code that checks ``isinstance(model.replay_buffer, NStepReplayBuffer)`` when
    ``n_steps > 1`` (SB3's own tests do) sees what it expects.

    The n-step gather is the flat buffer's (:meth:`ComplementaryReplayBuffer.get_samples_at`,
    checked against SB3's in the tests), shared by weighted and uniform draws; an algorithm built
    with ``n_steps > 1`` and no ``replay_buffer_class`` replays through this class.
    """

    def _get_samples(self, batch_inds: np.ndarray, env: VecNormalize | None = None) -> ReplayBufferSamples:
        envs = np.random.randint(0, high=self.n_envs, size=(len(batch_inds),))  # SB3's draw, then our gather
        return self.get_samples_at(batch_inds * self.n_envs + envs, env)  # type: ignore[return-value]
