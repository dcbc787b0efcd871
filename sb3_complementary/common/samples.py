"""The batches the weighted buffers return: SB3's samples, and a weighted batch with what its update needs."""

from typing import NamedTuple

import numpy as np
import torch as th
from stable_baselines3.common.type_aliases import DictReplayBufferSamples, ReplayBufferSamples

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
