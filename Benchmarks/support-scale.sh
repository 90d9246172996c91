#!/usr/bin/env bash
# Support's pages as the ledger grows (issue 38 §1), on SQLite and then PostgreSQL: one database per engine is filled
# by SQL to each size in turn (customers with ten receipts each, the store's triggers keeping its rollups), and at
# each size `coffer serve` answers support, signed in, opening every panel page, every admin API read, the probes and
# GET /v1/me 40 times each; the CLI's reads run as processes. The goal: every page's p99 under 100 ms, and none
# growing more than 3x for ten times the data.
#
#   Benchmarks/support-scale.sh [CUSTOMERS]     default 10000,100000,1000000 (100 thousand to 10 million receipts)
#
# About two hours at the default sizes after a release build, most of it writing ten million receipts on each
# engine. Needs PostgreSQL's binaries (scripts/postgres starts a throwaway server).
set -euo pipefail
cd "$(dirname "$0")/.."
customers="${1:-10000,100000,1000000}"
rm -f Benchmarks/.build/release.yaml
swift build -c release --package-path Benchmarks --product DeliveryLoad
load=Benchmarks/.build/release/DeliveryLoad
nproc | xargs echo "cores:"
echo "== SQLite (synchronous=FULL, WAL)"
"$load" support --engine sqlite --customers "$customers"
echo "== PostgreSQL"
eval "$(scripts/postgres)"
trap 'scripts/postgres stop "$COFFER_TEST_POSTGRES_DIR"' EXIT
psql "$COFFER_TEST_POSTGRES_URL" -q -c "CREATE DATABASE coffer_support"
"$load" support --engine postgres --database-url "${COFFER_TEST_POSTGRES_URL%/postgres}/coffer_support" \
    --customers "$customers"
