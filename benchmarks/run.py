"""``python -m benchmarks.run``: run the pending runs of a benchmark matrix (see :mod:`benchmarks.harness.runner`)."""

import sys

from benchmarks.harness.runner import main

if __name__ == "__main__":
    sys.exit(main())
