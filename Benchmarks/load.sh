#!/usr/bin/env bash
# The load test (issue 8): 1,000 concurrent connections posting verified deliveries to `coffer serve` on
# SQLite for SECONDS (default 60) on loopback, after a 5-second warm-up. It stops by itself, fails on any
# error, and reports deliveries per second, latency percentiles and the server's memory every 10 seconds.
#
#   Benchmarks/load.sh [SECONDS] [CONNECTIONS]
#
# About 1 minute plus SECONDS after a release build: 1,000 users are created and enough transactions signed
# first (110 seconds for a 600-second run).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
connections="${2:-1000}"
transactions=$(( (seconds + 10) * 4000 ))
ulimit -n 8192 2>/dev/null || ulimit -n "$(ulimit -Hn)"
rm -f Benchmarks/.build/release.yaml
swift build -c release --package-path Benchmarks --product DeliveryLoad
Benchmarks/.build/release/DeliveryLoad run --engine sqlite --seconds "$seconds" --connections "$connections" \
    --transactions "$transactions" --check
