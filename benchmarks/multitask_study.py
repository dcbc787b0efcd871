"""
``python -m benchmarks.multitask_study``: the per-task tables and plots of multi-task run files (see
:mod:`benchmarks.harness.multitask_study`).
"""

import sys

from benchmarks.harness.multitask_study import main

if __name__ == "__main__":
    sys.exit(main())
