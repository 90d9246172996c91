#!/usr/bin/env bash
# A game's hands in the device wallet through the real SDK against `coffer serve` on SQLite (issue 34, section 3):
# each hand a bet and every other hand a win, with CofferModel watching. Reports the time per hand and the requests
# the SDK sent while the hands ran (the aim: none per hand, backups coalesced to one per backupDelay), and fails
# when the model or the server's backup ends with another balance than the hands left.
#
#   Benchmarks/hands.sh [HANDS] [debug|release]
set -euo pipefail
cd "$(dirname "$0")/.."
hands="${1:-10000}"
configuration="${2:-release}"
if [ "$configuration" = "debug" ]; then
    # The package's own build folder, as the test command builds the benchmarks.
    rm -f .build/debug.yaml
    swift build --package-path Benchmarks --scratch-path .build --product DeliveryLoad
    bin="$(swift build --package-path Benchmarks --scratch-path .build --show-bin-path)"
else
    rm -f Benchmarks/.build/release.yaml
    swift build -c release --package-path Benchmarks --product DeliveryLoad
    bin=Benchmarks/.build/release
fi
"$bin/DeliveryLoad" hands --hands "$hands"
