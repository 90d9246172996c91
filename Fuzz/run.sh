#!/usr/bin/env bash
# Builds the libFuzzer target with address sanitizer and runs it for SECONDS (default 30), starting from
# the seed corpus. A crash leaves crash-* files in Fuzz/artifacts: turn each into a regression test.
#   Fuzz/run.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")"
seconds=${1:-30}
swift build --package-path . --scratch-path ../.build-fuzz -c debug ${CI:+-debug-info-format none} \
    -Xswiftc -sanitize=fuzzer,address -Xswiftc -enable-testing -Xswiftc -use-ld=lld >/dev/null
mkdir -p artifacts corpus-work
cp -n corpus/* corpus-work/ 2>/dev/null || true
# Swift's backtracer is off: under the sanitizers it can wait forever on a crash instead of reporting it. Leak
# detection is off: the route target's in-process server keeps certificates, keys and channels for its whole
# life, which LeakSanitizer reports as leaks of whichever input first allocates; crashes, hangs and answers of
# 500 or more are what the targets look for.
SWIFT_BACKTRACE=enable=no ASAN_OPTIONS=detect_leaks=0 ../.build-fuzz/debug/CofferFuzz corpus-work \
    -detect_leaks=0 -max_total_time="$seconds" -max_len=65536 -artifact_prefix=artifacts/ \
    -print_final_stats=1 2>&1 | tail -15
