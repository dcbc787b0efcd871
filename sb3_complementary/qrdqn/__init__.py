from sb3_complementary.qrdqn.complementary_qrdqn import ComplementaryQRDQN
from sb3_complementary.qrdqn.prioritized_qrdqn import PrioritizedQRDQN

__all__ = ["ComplementaryQRDQN", "PrioritizedQRDQN"]
