from sb3_complementary.sac.complementary_sac import ComplementarySAC
from sb3_complementary.sac.prioritized_sac import PrioritizedSAC

__all__ = ["ComplementarySAC", "PrioritizedSAC"]
