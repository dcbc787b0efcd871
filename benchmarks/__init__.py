"""
The lab of sb3-complementary: everything that measures the library and is not part of it. It is
imported from a checkout (the repository root on ``sys.path``: ``python -m benchmarks.<module>``
from the root), never installed; the wheel holds ``sb3_complementary`` alone.

- :mod:`benchmarks.harness`: the benchmark harness (matrices, runs, run files, the rliable report,
  the multi-task study's per-task tables);
- ``benchmarks/matrices/``: the matrices of the screens and studies whose run files are committed;
- :mod:`benchmarks.run`, :mod:`benchmarks.report`, :mod:`benchmarks.multitask_study`: the commands;
- :mod:`benchmarks.regenerate`: every generated page of the docs from the committed run files;
- :mod:`benchmarks.diagnostics`: one-off measurements behind the gates and the history;
- ``perf.py``, ``perf_sac.py``, ``fingerprint.py``, the pilots: cost, behaviour and gate-0 scripts.

See ``benchmarks/README.md``.
"""
