from sb3_complementary.ddpg.complementary_ddpg import ComplementaryDDPG

__all__ = ["ComplementaryDDPG"]
