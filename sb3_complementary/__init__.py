"""sb3-complementary: weighted experience replay (Complementary RL, LaBER, PER) for Stable-Baselines3."""

from sb3_complementary.common.buffers import (
    ComplementaryDictReplayBuffer,
    ComplementaryNStepReplayBuffer,
    ComplementaryReplayBuffer,
    WeightedSamples,
)
from sb3_complementary.common.export import export_to_sb3
from sb3_complementary.common.extractor import ExperienceExtractor, ExtractorTrainingCallback
from sb3_complementary.common.her_replay_buffer import ComplementaryHerReplayBuffer, PrioritizedHerReplayBuffer
from sb3_complementary.crossq import ComplementaryCrossQ
from sb3_complementary.ddpg import ComplementaryDDPG
from sb3_complementary.dqn import ComplementaryDQN, PrioritizedDQN
from sb3_complementary.multitask import MultiTaskEnv, evaluate_multitask
from sb3_complementary.qrdqn import ComplementaryQRDQN, PrioritizedQRDQN
from sb3_complementary.sac import ComplementarySAC, PrioritizedSAC
from sb3_complementary.td3 import ComplementaryTD3, PrioritizedTD3
from sb3_complementary.tqc import ComplementaryTQC

__version__ = "0.2.0"


__all__ = [
    "ComplementaryCrossQ",
    "ComplementaryDDPG",
    "ComplementaryDQN",
    "ComplementaryDictReplayBuffer",
    "ComplementaryHerReplayBuffer",
    "ComplementaryNStepReplayBuffer",
    "ComplementaryQRDQN",
    "ComplementaryReplayBuffer",
    "ComplementarySAC",
    "ComplementaryTD3",
    "ComplementaryTQC",
    "ExperienceExtractor",
    "ExtractorTrainingCallback",
    "MultiTaskEnv",
    "PrioritizedDQN",
    "PrioritizedHerReplayBuffer",
    "PrioritizedQRDQN",
    "PrioritizedSAC",
    "PrioritizedTD3",
    "WeightedSamples",
    "__version__",
    "evaluate_multitask",
    "export_to_sb3",
]
