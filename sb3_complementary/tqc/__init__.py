from sb3_complementary.tqc.complementary_tqc import ComplementaryTQC

__all__ = ["ComplementaryTQC"]
