#!/usr/bin/env bash
# Durable deliveries per second over HTTP (issue 5): `coffer serve` on SQLite, then on PostgreSQL, each
# loaded by 64 connections posting distinct signed transactions for 60 seconds on loopback.
#
#   Benchmarks/deliveries.sh [SECONDS] [CONNECTIONS]
#
# About 8 minutes: a release build, signing the transactions, and two runs. PostgreSQL is a throwaway
# server started by scripts/postgres (fsync on, as in production).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
connections="${2:-64}"
# Enough distinct transactions for each run (signing them takes about 0.75 ms each on this machine).
sqlite_transactions=$(( (seconds + 10) * 2400 ))
postgres_transactions=$(( (seconds + 10) * 800 ))

# SwiftPM caches the root package's file list here; start from a fresh plan so new files are seen.
rm -f Benchmarks/.build/release.yaml
swift build -c release --package-path Benchmarks --product DeliveryLoad
load=Benchmarks/.build/release/DeliveryLoad

echo "== SQLite (synchronous=FULL, WAL)"
"$load" run --engine sqlite --seconds "$seconds" --connections "$connections" --transactions "$sqlite_transactions"

echo "== PostgreSQL"
eval "$(scripts/postgres)"
trap 'scripts/postgres stop "$COFFER_TEST_POSTGRES_DIR"' EXIT
psql "$COFFER_TEST_POSTGRES_URL" -q -c "CREATE DATABASE coffer_load"
"$load" run --engine postgres --database-url "${COFFER_TEST_POSTGRES_URL%/postgres}/coffer_load" \
    --seconds "$seconds" --connections "$connections" --transactions "$postgres_transactions"
