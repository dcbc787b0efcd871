"""``python -m sb3_complementary.benchmark.report``: the benchmark page from the run files (see :mod:`.cli`)."""

import sys

from sb3_complementary.benchmark.report.cli import main

if __name__ == "__main__":
    sys.exit(main())
