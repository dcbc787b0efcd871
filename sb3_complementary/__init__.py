"""sb3-complementary: learned, co-evolving replay (Complementary RL) and prioritized replay for Stable-Baselines3."""

from sb3_complementary.common.buffers import ComplementaryDictReplayBuffer, ComplementaryReplayBuffer, WeightedSamples
from sb3_complementary.common.callbacks import ExtractorTrainingCallback
from sb3_complementary.common.extractor import ExperienceExtractor
from sb3_complementary.dqn import ComplementaryDQN, PrioritizedDQN

__version__ = "0.1.0"

__all__ = [
    "ComplementaryDQN",
    "ComplementaryDictReplayBuffer",
    "ComplementaryReplayBuffer",
    "ExperienceExtractor",
    "ExtractorTrainingCallback",
    "PrioritizedDQN",
    "WeightedSamples",
    "__version__",
]
