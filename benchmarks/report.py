"""``python -m benchmarks.report``: a results page from the run files (see :mod:`benchmarks.harness.report`)."""

import sys

from benchmarks.harness.report.cli import main

if __name__ == "__main__":
    sys.exit(main())
