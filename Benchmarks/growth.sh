#!/usr/bin/env bash
# The ledger as it grows (issue 8): a durable delivery (one per commit and 64 per commit), a wallet read,
# support's Support ID search and the dashboard at 10 thousand, 100 thousand and 1 million ledger entries
# (10 per user), on SQLite and then PostgreSQL, and on PostgreSQL again with one entry per user (a million
# users).
#
#   Benchmarks/growth.sh [ENTRIES]
#
# About 15 minutes for 1 million entries after a release build. PostgreSQL is filled in bulk
# by SQL (`--bulk`: the same rows the ledger writes); leave it out to fill through the store's API (slow).
set -euo pipefail
cd "$(dirname "$0")/.."
entries="${1:-1000000}"
rm -f Benchmarks/.build/release.yaml
swift build -c release --package-path Benchmarks --product LedgerGrowth
echo "== SQLite"
Benchmarks/.build/release/LedgerGrowth --entries "$entries"
echo "== PostgreSQL"
eval "$(scripts/postgres)"
trap 'scripts/postgres stop "$COFFER_TEST_POSTGRES_DIR"' EXIT
psql "$COFFER_TEST_POSTGRES_URL" -q -c "CREATE DATABASE coffer_growth"
Benchmarks/.build/release/LedgerGrowth --entries "$entries" --bulk \
    --database-url "${COFFER_TEST_POSTGRES_URL%/postgres}/coffer_growth"
echo "== PostgreSQL, one entry per user"
Benchmarks/.build/release/LedgerGrowth --entries "$entries" --entries-per-user 1 --bulk \
    --database-url "${COFFER_TEST_POSTGRES_URL%/postgres}/coffer_growth"
