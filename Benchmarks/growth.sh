#!/usr/bin/env bash
# The ledger as it grows (issues 8 and 38 §4): a durable delivery (one per commit and 64 per commit), a wallet read,
# support's Support ID search, the dashboard and the process's resident memory at 100 thousand, 1 million and
# 10 million ledger entries (about ten per customer), on SQLite and then PostgreSQL.
#
#   Benchmarks/growth.sh [ENTRIES] [--api]        default 10000000
#
# Each size is filled by SQL (`--bulk`: the rows the ledger writes, the store's triggers on), about 7 minutes to
# 10 million entries on SQLite and 20 on PostgreSQL after a release build. With `--api` SQLite is filled through the
# store's API instead, in group commits of 1,000 (about 4 minutes a million entries), and measured at 10 thousand too.
set -euo pipefail
cd "$(dirname "$0")/.."
entries=10000000
fill=--bulk
for argument in "$@"; do
    case "$argument" in
        --api) fill="" ;;
        *) entries="$argument" ;;
    esac
done
rm -f Benchmarks/.build/release.yaml
swift build -c release --package-path Benchmarks --product LedgerGrowth
echo "== SQLite"
Benchmarks/.build/release/LedgerGrowth --entries "$entries" $fill
echo "== PostgreSQL"
eval "$(scripts/postgres)"
trap 'scripts/postgres stop "$COFFER_TEST_POSTGRES_DIR"' EXIT
psql "$COFFER_TEST_POSTGRES_URL" -q -c "CREATE DATABASE coffer_growth"
Benchmarks/.build/release/LedgerGrowth --entries "$entries" --bulk \
    --database-url "${COFFER_TEST_POSTGRES_URL%/postgres}/coffer_growth"
