#!/usr/bin/env bash
# Builds the libFuzzer target with address sanitizer and runs it for SECONDS (default 30), starting from
# the seed corpus. A crash leaves crash-* files in Fuzz/artifacts: turn each into a regression test.
#   Fuzz/run.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")"
seconds=${1:-30}
swift build --package-path . --scratch-path ../.build-fuzz -c debug \
    -Xswiftc -sanitize=fuzzer,address -Xswiftc -enable-testing -Xswiftc -use-ld=lld >/dev/null
mkdir -p artifacts corpus-work
cp -n corpus/* corpus-work/ 2>/dev/null || true
../.build-fuzz/debug/CofferFuzz corpus-work -max_total_time="$seconds" -max_len=65536 -artifact_prefix=artifacts/ \
    -print_final_stats=1 2>&1 | tail -15
