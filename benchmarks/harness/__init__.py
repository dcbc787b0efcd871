"""
Benchmark harness for the replay contenders (see ``benchmarks/README.md`` and the protocol in
``docs/benchmarks/protocol.md``). It measures the library (``sb3_complementary``) from a checkout
and is not part of the installed package: the library never imports it.

The harness is split into one concept per module:

- :mod:`.matrix`: the matrix (contenders x suite entries x seeds) as dataclasses, and its runs;
- :mod:`.matrix_yaml`: reading the matrix from YAML and validating it;
- :mod:`.seeds`: seed sets such as ``"0-9"`` or ``"0-4,7"``;
- :mod:`.hyperparams`: rl-zoo3 tuned DQN hyperparameters, read and parsed without ``eval``;
- :mod:`.envs`: building an environment from a suite entry;
- :mod:`.run`: one run (train, evaluate every 5% of the budget, time it, record it);
- :mod:`.store`: one JSON file per run, written atomically, and the resume logic;
- :mod:`.normalize`: reference scores and random-policy scores for normalisation;
- :mod:`.metrics`: AUC and final score of a normalised learning curve;
- :mod:`.plan`: which runs of a matrix are done, failed or pending (seed-major);
- :mod:`.backends`: where the runs execute (this process, local processes or Ray);
- :mod:`.execute`: executing the pending runs on a backend and writing their files;
- :mod:`.provenance`: the git commit and content hashes of the library and the harness, stored in
  every run file;
- :mod:`.runner`: the command line that runs the pending runs (``python -m benchmarks.run``);
- :mod:`.report`: the statistics (rliable) and the ``README.md`` + PNGs (a package: collecting the
  runs, statistics, plots, the page, the command line: ``python -m benchmarks.report``);
- :mod:`.multitask_study`: the per-task tables and plots of multi-task runs
  (``python -m benchmarks.multitask_study``).

Nothing here imports the contenders themselves: they are imported lazily, inside the
process that executes a run of that contender.
"""

from benchmarks.harness.matrix import Contender, Matrix, RunSpec, SuiteEntry
from benchmarks.harness.matrix_yaml import load_matrix

__all__ = ["Contender", "Matrix", "RunSpec", "SuiteEntry", "load_matrix"]
