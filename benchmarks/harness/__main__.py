"""``python -m sb3_complementary.benchmark``: run the pending runs of a benchmark matrix (see :mod:`.runner`)."""

import sys

from sb3_complementary.benchmark.runner import main

if __name__ == "__main__":
    sys.exit(main())
