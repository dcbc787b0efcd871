#!/usr/bin/env bash
# The GPU checks of issue 33, on a machine with CUDA, in one go (about 10 minutes on one GPU):
#   1. tests/test_gpu.py: every class trained on CUDA, saved/loaded across devices, exported;
#   2. benchmarks/perf.py --device cuda: DQN, PrioritizedDQN and the default ComplementaryDQN
#      side by side on the GPU, MlpPolicy and CnnPolicy.
# Results (test log and JUnit XML, perf JSON and log) go under $OUT if it is set, else
# benchmarks/gpu-results/. Run from anywhere: bash benchmarks/gpu_check.sh
set -uo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python}"
out="${OUT:-benchmarks/gpu-results}"
"$PYTHON" -c "import sys, torch; sys.exit(0 if torch.cuda.is_available() else 'gpu_check.sh: no CUDA on this machine')" || exit 2
mkdir -p "$out"
"$PYTHON" -m pytest -q tests/test_gpu.py -p no:cacheprovider --junitxml "$out/gpu-tests.xml" 2>&1 | tee "$out/gpu-tests.log"
tests_status=${PIPESTATUS[0]}
"$PYTHON" -m benchmarks.perf --device cuda --steps 10000 --repeats 2 --out "$out/performance-gpu.json" 2>&1 | tee "$out/perf-gpu.log"
perf_status=${PIPESTATUS[0]}
echo "gpu tests: exit $tests_status; perf: exit $perf_status; results in $out"
exit $((tests_status != 0 ? tests_status : perf_status))
