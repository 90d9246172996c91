#!/usr/bin/env bash
# Verified, durable deliveries per second over HTTP (issue 20), with wrk as the load generator, 64 keep-alive
# connections on loopback:
#   1. SQLite (synchronous=FULL): first the limit in the same run (a bare Hummingbird route doing one ES256
#      verification per request), then `coffer serve`, then the mixed load (deliveries, GET /v1/me, spends,
#      grant claims, refund notifications);
#   2. PostgreSQL 15 (fsync on): two `coffer serve` instances on one database, then the mixed load.
# After each run the servers stop and the ledger is read: every acknowledged delivery once, every balance
# equal to its entries. Each run reports CPU per delivery (the servers', PostgreSQL's, the rest).
#
#   Benchmarks/deliveries.sh [SECONDS] [CONNECTIONS] [INSTANCES]     defaults 60, 64, 2
#
# About 12 minutes after a release build (signing the transactions first, about 40 s a run). Needs wrk
# (apt-get install wrk); PostgreSQL is a throwaway server started by scripts/postgres.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
connections="${2:-64}"
instances="${3:-2}"
command -v wrk >/dev/null || { echo "wrk is needed: apt-get install wrk" >&2; exit 1; }

# SwiftPM caches the root package's file list here; start from a fresh plan so new files are seen.
rm -f Benchmarks/.build/release.yaml
swift build -c release --package-path Benchmarks --product DeliveryLoad
load=Benchmarks/.build/release/DeliveryLoad
nproc | xargs echo "cores:"

echo "== SQLite (synchronous=FULL, WAL)"
"$load" wrk --engine sqlite --seconds "$seconds" --connections "$connections" --peer --mixed

echo "== PostgreSQL, $instances instances on one database"
eval "$(scripts/postgres)"
trap 'scripts/postgres stop "$COFFER_TEST_POSTGRES_DIR"' EXIT
psql "$COFFER_TEST_POSTGRES_URL" -q -c "CREATE DATABASE coffer_load"
"$load" wrk --engine postgres --database-url "${COFFER_TEST_POSTGRES_URL%/postgres}/coffer_load" \
    --instances "$instances" --seconds "$seconds" --connections "$connections" --mixed
