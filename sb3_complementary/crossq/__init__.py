from sb3_complementary.crossq.complementary_crossq import ComplementaryCrossQ

__all__ = ["ComplementaryCrossQ"]
