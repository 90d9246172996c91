#!/usr/bin/env bash
# Where a delivery's CPU goes (issue 20): `coffer serve` under the wrk load of Benchmarks/deliveries.sh for 20
# seconds, sampled by perf (with DWARF call graphs) for 5 seconds in the middle, then a table of each part's share
# of the server's CPU and its microseconds per delivery.
#
#   Benchmarks/profile.sh              SQLite, one instance (needs perf, from Debian's linux-perf, and wrk)
#   Benchmarks/profile.sh postgres     PostgreSQL, two instances on a throwaway server (scripts/postgres); the
#                                      first instance is sampled, the table uses both instances' CPU a delivery
set -euo pipefail
cd "$(dirname "$0")/.."
engine="${1:-sqlite}"
command -v perf >/dev/null || { echo "perf is needed: apt-get install linux-perf" >&2; exit 1; }
work=$(mktemp -d)
# The throwaway PostgreSQL server this script started, if any (never one the caller's shell names).
database_dir=""
cleanup() {
    if [ -n "$database_dir" ]; then scripts/postgres stop "$database_dir"; fi
    rm -rf "$work"
}
trap cleanup EXIT
rm -f Benchmarks/.build/release.yaml
swift build -c release --package-path Benchmarks --product DeliveryLoad >/dev/null
case "$engine" in
sqlite) arguments=(--engine sqlite) ;;
postgres)
    eval "$(scripts/postgres)"
    database_dir="$COFFER_TEST_POSTGRES_DIR"
    psql "$COFFER_TEST_POSTGRES_URL" -q -c "CREATE DATABASE coffer_load"
    arguments=(--engine postgres --database-url "${COFFER_TEST_POSTGRES_URL%/postgres}/coffer_load" --instances 2)
    ;;
*) echo "usage: Benchmarks/profile.sh [sqlite|postgres]" >&2; exit 1 ;;
esac
Benchmarks/.build/release/DeliveryLoad wrk "${arguments[@]}" --seconds 20 --warmup 5 >"$work/run.log" 2>&1 &
runner=$!
until grep -q "signed" "$work/run.log" 2>/dev/null; do sleep 0.5; done
server=$(pgrep -f "DeliveryLoad serve" | head -1)
sleep 12
perf record -F 199 --call-graph dwarf,16384 -p "$server" -o "$work/perf.data" -- sleep 5 >/dev/null 2>&1
wait "$runner"
cat "$work/run.log"
# The server's CPU per delivery over the whole window (perf's own overhead included; with several instances, all of
# theirs: they run the same code on the same load, so one instance's shares stand for them all).
micros=$(sed -n 's/^CPU per delivery: server \([0-9]*\) µs.*/\1/p' "$work/run.log")
perf script -i "$work/perf.data" 2>/dev/null | swift demangle --simplified | python3 Benchmarks/python/cpu_table.py "$micros"
