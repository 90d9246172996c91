#!/usr/bin/env bash
# Faults a deployment meets (issue 22), as figures: two instances on PostgreSQL through the fault proxy under
# load (requests answered, 503s, the slowest answer, the time to serve again), RUNS times; then the model
# simulation's 1,000 seeds of 100 steps alone (seeds per second). Debug build, as the test command runs them.
#
#   Benchmarks/faults.sh [RUNS]
#
# About 5 minutes. Uses COFFER_TEST_POSTGRES_URL when set, otherwise starts a throwaway PostgreSQL.
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${1:-5}"
swift build --build-tests 2>&1 | grep -E "error|Build complete" || true
if [ -z "${COFFER_TEST_POSTGRES_URL:-}" ]; then
    eval "$(scripts/postgres)"
    trap 'scripts/postgres stop "$COFFER_TEST_POSTGRES_DIR"' EXIT
fi
export COFFER_TEST_POSTGRES_URL
echo "== two instances on PostgreSQL through cuts, killed backends, delays, a black hole and a restart ($runs runs)"
for run in $(seq 1 "$runs"); do
    output=$(swift test --skip-build --filter FaultLoadTests 2>&1 || true)
    grep -o 'fault load: .*' <<<"$output" | sed "s/^/run $run: /"
    grep -q 'passed after' <<<"$output" || { echo "run $run FAILED"; tail -30 <<<"$output"; exit 1; }
done
echo "== the model simulation, 1,000 seeds of 100 steps, alone"
COFFER_MODEL_SEEDS=1-1000 swift test --skip-build --filter ModelSimulationTests 2>&1 | grep -o 'model simulation: .*'
