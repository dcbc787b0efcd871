"""
The replay buffers of the weighted algorithms, where users import them from.

:class:`ComplementaryReplayBuffer` (:mod:`.replay_buffer`) and its variants for ``Dict``
observation spaces and for n-step returns. The variants only adapt the storage to SB3's
``DictReplayBuffer`` and ``NStepReplayBuffer``: scores, draws and IS weights are the flat buffer's.
"""

import inspect
from typing import Any

import numpy as np
import torch as th
from gymnasium import spaces
from stable_baselines3.common.buffers import DictReplayBuffer, NStepReplayBuffer
from stable_baselines3.common.type_aliases import ReplayBufferSamples
from stable_baselines3.common.vec_env import VecNormalize

from sb3_complementary.common.replay_buffer import (
    NEUTRAL_SCORE,
    ComplementaryReplayBuffer,
    Samples,
    WeightedSamples,
    take_rows,
)

__all__ = [
    "NEUTRAL_SCORE",
    "ComplementaryDictReplayBuffer",
    "ComplementaryNStepReplayBuffer",
    "ComplementaryReplayBuffer",
    "Samples",
    "WeightedSamples",
    "take_rows",
]


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


# Same parameters as the flat buffer (SB3's positional order, then the replay knobs), for inspect.signature.
ComplementaryDictReplayBuffer.__signature__ = inspect.signature(ComplementaryReplayBuffer)  # type: ignore[attr-defined]


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
