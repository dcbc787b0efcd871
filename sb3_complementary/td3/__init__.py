from sb3_complementary.td3.complementary_td3 import ComplementaryTD3
from sb3_complementary.td3.prioritized_td3 import PrioritizedTD3

__all__ = ["ComplementaryTD3", "PrioritizedTD3"]
