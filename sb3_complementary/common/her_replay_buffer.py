"""Weighted replay for goal-conditioned tasks: SB3's ``HerReplayBuffer`` that samples by score."""

from typing import Any

import numpy as np
import torch as th
from gymnasium import spaces
from stable_baselines3.common.buffers import DictReplayBuffer
from stable_baselines3.common.type_aliases import DictReplayBufferSamples
from stable_baselines3.common.vec_env import VecEnv, VecNormalize
from stable_baselines3.her import HerReplayBuffer
from stable_baselines3.her.goal_selection_strategy import GoalSelectionStrategy

from sb3_complementary.common.buffers import ComplementaryReplayBuffer


class ComplementaryHerReplayBuffer(ComplementaryReplayBuffer, HerReplayBuffer):
    """
    SB3's ``HerReplayBuffer`` (same constructor, goal strategies, ``copy_info_dict``, ``n_envs``,
    save/load with the env re-attached) whose draws follow the scores of a
    :class:`ComplementaryReplayBuffer`: a uniform share plus a share by priority, with IS weights.

    **How a relabelled transition is weighted.** The draw picks *stored* transitions, as SB3's
    HER does; relabelling happens after the draw, so a relabelled (virtual) transition carries
    the weight of the stored transition it was made from, and the ``|TD|`` measured on it is
    fed back to that transition. In every group of a batch (the uniform share, the scored
    share) the first ``her_ratio`` of the slots are relabelled, as SB3 relabels the first
    ``her_ratio`` of its batch, so the control group is relabelled like the rest. With draw-time
    selection (the algorithm's ``candidate_pool``) the pool is relabelled the same way
    (``gather_pool``), so each candidate is scored on its fresh ``|TD|`` under its own goal. The fast/slow
    density ratio is computed without the ``desired_goal`` entry: relabelling changes it, and a
    weight that depended on it would belong to a goal the transition may never be replayed with.

    Only transitions of finished episodes are drawn (SB3's rule: goals are taken from the same
    episode); a transition's priority enters the sum tree when its episode ends and leaves it
    when its episode starts being overwritten. With ``uniform_fraction=1`` the draws, the
    relabelling and the batch are SB3's, call for call on NumPy's global generator.

    :param buffer_size: Max number of transitions (over all envs), as in SB3.
    :param observation_space: A goal ``Dict`` space (``observation``, ``achieved_goal``, ``desired_goal``).
    :param action_space: Action space.
    :param env: The training VecEnv, whose ``compute_reward`` scores relabelled goals.
    :param device: PyTorch device.
    :param n_envs: Number of parallel environments.
    :param optimize_memory_usage: Not supported (SB3's ``DictReplayBuffer`` raises).
    :param handle_timeout_termination: Treat time-limit truncation as non-terminal, as in SB3.
    :param n_sampled_goal: Relabelled transitions per real one (``her_ratio = 1 - 1 / (n + 1)``).
    :param goal_selection_strategy: ``"future"``, ``"final"`` or ``"episode"``.
    :param copy_info_dict: Store the info dicts for ``compute_reward``.
    :param n_steps: Must be 1: HER replays 1-step transitions, as SB3's.
    :param alpha: Priority exponent, >= 0 (0 = uniform).
    :param beta: IS exponent in [0, 1]; the algorithm sets ``self.beta`` at every ``train()`` call.
    :param epsilon: Added to scores so no valid transition has zero probability, >= 0.
    :param uniform_fraction: Share of each batch drawn uniformly, in [0, 1].
    :param score_floor: Scores are clipped from below to this value, >= 0.
    :param initial_score: Score of a new transition: ``"max"`` or ``"neutral"``
        (:class:`~sb3_complementary.common.buffers.ComplementaryReplayBuffer`).
    """

    def __init__(
        self,
        buffer_size: int,
        observation_space: spaces.Dict,
        action_space: spaces.Space,
        env: VecEnv,
        device: th.device | str = "auto",
        n_envs: int = 1,
        optimize_memory_usage: bool = False,
        handle_timeout_termination: bool = True,
        n_sampled_goal: int = 4,
        goal_selection_strategy: GoalSelectionStrategy | str = "future",
        copy_info_dict: bool = False,
        n_steps: int = 1,
        alpha: float = 0.6,
        beta: float = 0.4,
        epsilon: float = 1e-6,
        uniform_fraction: float = 0.0,
        score_floor: float = 0.0,
        initial_score: str = "max",
    ) -> None:
        if n_steps > 1:
            raise ValueError(f"{type(self).__name__} replays 1-step transitions (as SB3's HER): got n_steps={n_steps}")
        if not isinstance(observation_space, spaces.Dict) or optimize_memory_usage:
            # SB3's own error for a non-goal space or a memory-optimised layout.
            DictReplayBuffer(buffer_size, observation_space, action_space, optimize_memory_usage=optimize_memory_usage)
        super().__init__(
            buffer_size,
            observation_space,
            action_space,
            device=device,
            n_envs=n_envs,
            handle_timeout_termination=handle_timeout_termination,
            alpha=alpha,
            beta=beta,
            epsilon=epsilon,
            uniform_fraction=uniform_fraction,
            score_floor=score_floor,
            initial_score=initial_score,
            env=env,
            n_sampled_goal=n_sampled_goal,
            goal_selection_strategy=goal_selection_strategy,
            copy_info_dict=copy_info_dict,
        )
        #: ``(buffer_size * n_envs,)`` SB3's HER rule, kept up to date by ``add``: True where the
        #: transition's episode has ended and has not started being overwritten (``ep_length > 0``).
        self._sampleable = np.zeros(self.buffer_size * self.n_envs, dtype=bool)
        self._n_sampleable = 0
        #: Flat indices whose drawability changed since the tree last followed (only while there is a tree).
        self._changed: list[np.ndarray] = []
        self.ratio_excluded_keys = ("desired_goal",)  # relabelling changes it: see the class docstring

    # ------------------------------------------------------------------ which transitions are drawable
    def add(  # type: ignore[override]
        self,
        obs: dict[str, np.ndarray],
        next_obs: dict[str, np.ndarray],
        action: np.ndarray,
        reward: np.ndarray,
        done: np.ndarray,
        infos: list[dict[str, Any]],
    ) -> None:
        """SB3's HER ``add``; the episode it starts overwriting (HER drops it whole) leaves the draw."""
        for env_idx in range(self.n_envs):
            length = self.ep_length[self.pos, env_idx]
            if length > 0:
                rows = np.arange(self.pos, self.ep_start[self.pos, env_idx] + length) % self.buffer_size
                self._set_sampleable(rows * self.n_envs + env_idx, False)
        super().add(obs, next_obs, action, reward, done, infos)

    def _compute_episode_length(self, env_idx: int) -> None:
        """SB3's; the episode that ends here (in ``add`` or ``truncate_last_trajectory``) becomes drawable."""
        start, end = self._current_ep_start[env_idx], self.pos
        if end < start:
            end += self.buffer_size
        super()._compute_episode_length(env_idx)
        self._set_sampleable(np.arange(start, end) % self.buffer_size * self.n_envs + env_idx, True)

    def _set_sampleable(self, indices: np.ndarray, value: bool) -> None:
        changed = indices[self._sampleable[indices] != value]
        self._sampleable[changed] = value
        self._n_sampleable += len(changed) if value else -len(changed)
        if self.tree is not None:
            self._changed.append(changed)

    def valid_indices(self) -> np.ndarray:
        return np.flatnonzero(self._sampleable)

    def n_valid(self) -> int:
        return self._n_sampleable

    def uniform_indices(self, n: int) -> np.ndarray:
        """``(n,)`` flat indices drawn as SB3's ``HerReplayBuffer.sample`` draws them (same NumPy call)."""
        if n == 0:
            return np.zeros(0, dtype=np.int64)
        valid = self.valid_indices()
        if valid.size == 0:
            raise RuntimeError(
                "Unable to sample before the end of the first episode. We recommend choosing a value "
                "for learning_starts that is greater than the maximum number of timesteps in the environment."
            )
        return np.random.choice(valid, size=n, replace=True)

    def _pending_leaves(self, scores: np.ndarray, new_rows: list[int]) -> tuple[np.ndarray, np.ndarray]:
        """
        The leaves the tree must change (``new_rows``, and the transitions whose drawability changed)
        and their priorities: the score's once the episode has ended, 0 before and once it is being overwritten.
        """
        indices = np.unique(np.concatenate([self.row_indices(new_rows), *self._changed]))
        return indices, np.where(self._sampleable[indices], self.priority(scores[indices]), 0.0)

    def _flush_new(self) -> None:
        """The new rows' initial scores, then the tree follows the episodes that ended or are being overwritten."""
        tree = self.tree
        if tree is None or (not self._unscored_rows and not self._changed):
            return
        new_rows = self._unscored_rows
        super()._flush_new()  # the new rows' scores
        tree.update(*self._pending_leaves(self.scores, new_rows))
        self._changed = []

    def _leaves(self) -> tuple[np.ndarray, float]:
        if self.tree is None:
            return super()._leaves()
        if not self._unscored_rows and not self._changed:
            return self.tree.leaves, self.tree.total
        scores = self.scores.copy()
        scores[self.row_indices(self._unscored_rows)] = self._initial_score()
        leaves = self.tree.leaves.copy()
        indices, priorities = self._pending_leaves(scores, self._unscored_rows)
        leaves[indices] = priorities
        return leaves, float(leaves.sum())

    def set_all_scores(self, indices: np.ndarray, scores: np.ndarray) -> None:
        """
        As the flat buffer's, for the drawable transitions (``indices`` is ``valid_indices()``);
        those of running episodes get the initial score, their priority when their episode ends.
        """
        super().set_all_scores(indices, scores)
        self._changed = []
        self.scores[~self._sampleable] = self._initial_score()

    # ------------------------------------------------------------------ gathering
    def _virtual_slots(self, control: np.ndarray) -> np.ndarray:
        """``(n,)`` True for the slots to relabel: the first ``her_ratio`` of each group (uniform, scored)."""
        virtual = np.zeros(len(control), dtype=bool)
        for group in (np.flatnonzero(control), np.flatnonzero(~control)):
            virtual[group[: int(self.her_ratio * len(group))]] = True
        return virtual

    def _gather(
        self, indices: np.ndarray, control: np.ndarray, env: VecNormalize | None
    ) -> tuple[DictReplayBufferSamples, np.ndarray]:
        """
        Relabel a share of the drawn transitions (SB3's ``_get_virtual_samples``) and lay the batch
        out as SB3's HER does: the real transitions first, then the relabelled ones.
        """
        virtual = self._virtual_slots(control)
        if virtual.any():
            self._require_env()
        parts = []
        for gather, slots in ((self._get_real_samples, ~virtual), (self._get_virtual_samples, virtual)):
            if slots.any():  # an empty relabelling would call compute_reward on nothing
                rows, envs = np.divmod(indices[slots], self.n_envs)
                parts.append(gather(rows, envs, env))
        samples = DictReplayBufferSamples(
            observations={k: th.cat([p.observations[k] for p in parts]) for k in parts[0].observations},
            actions=th.cat([p.actions for p in parts]),
            next_observations={k: th.cat([p.next_observations[k] for p in parts]) for k in parts[0].next_observations},
            dones=th.cat([p.dones for p in parts]),
            rewards=th.cat([p.rewards for p in parts]),
        )
        return samples, np.concatenate([np.flatnonzero(~virtual), np.flatnonzero(virtual)])

    def sample(self, batch_size: int, env: VecNormalize | None = None) -> DictReplayBufferSamples:  # type: ignore[override]
        """SB3's contract: HER's uniform, relabelled batch (the scores play no part)."""
        if self.her_ratio > 0:
            self._require_env()
        return HerReplayBuffer.sample(self, batch_size, env)

    def _require_env(self) -> None:
        """A relabelled reward needs the env's ``compute_reward``; a pickled buffer is loaded without it."""
        if getattr(self, "env", None) is None:
            raise ValueError(
                f"This {type(self).__name__} has no env: HER computes the rewards of relabelled goals with it, "
                "and a saved buffer does not keep it. Call buffer.set_env(env), or load the buffer with "
                "model.load_replay_buffer() on a model that has the env (pass env to load(), or call "
                "model.set_env(env))."
            )


class PrioritizedHerReplayBuffer(ComplementaryHerReplayBuffer):
    """
    The HER buffer of the Prioritized algorithms: :class:`ComplementaryHerReplayBuffer`, whose
    scores the algorithm sets to each stored transition's last ``|TD|`` (classic PER). A
    relabelled transition's ``|TD|`` is written back to the stored transition it was made from.
    """

