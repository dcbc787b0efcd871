from sb3_complementary.dqn.complementary_dqn import ComplementaryDQN
from sb3_complementary.dqn.prioritized_dqn import PrioritizedDQN

__all__ = ["ComplementaryDQN", "PrioritizedDQN"]
