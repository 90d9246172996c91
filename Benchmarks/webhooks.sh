#!/usr/bin/env bash
# Deliveries per second with webhooks on and off, side by side in one run (issue 37 §1): `coffer serve` on SQLite,
# loaded with wrk (64 connections), first with no endpoint, then with webhook.url naming a receiver on loopback
# that counts the events; every delivered purchase's event must arrive, and the rate with webhooks on must be 90%
# or more of the rate without. The phases run in pairs, the second in the opposite order (off, on, on, off), each on
# a fresh server, and the rates over all phases are compared (this disk's speed drifts between minutes).
#
#   Benchmarks/webhooks.sh [SECONDS] [PAIRS]     defaults 30, 2
#
# Needs wrk (apt-get install wrk). About 8 minutes after a release build.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-30}"
pairs="${2:-2}"
command -v wrk >/dev/null || { echo "wrk is needed: apt-get install wrk" >&2; exit 1; }
rm -f Benchmarks/.build/release.yaml
swift build -c release --package-path Benchmarks --product DeliveryLoad
nproc | xargs echo "cores:"
Benchmarks/.build/release/DeliveryLoad webhooks --seconds "$seconds" --pairs "$pairs"
