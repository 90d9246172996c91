#!/usr/bin/env bash
# Verification throughput, all peers in one run on the same payloads:
#   Coffer's verifier (warm cache, cold) and the raw ES256 rate (ordo-one/benchmark),
#   Apple's App Store Server Library for Python 3.1.2 (offline verifier),
#   openssl speed ecdsap256 (the physical reference).
# Run from the repository root: Benchmarks/verification.sh
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

swift build -c release --package-path Benchmarks --product VerificationPayloads >/dev/null
Benchmarks/.build/release/VerificationPayloads "$work/payloads" 1000

python3 -m venv "$work/venv"
"$work/venv/bin/pip" install --quiet app-store-server-library==3.1.2
echo "== Apple's Python library (app-store-server-library 3.1.2)"
"$work/venv/bin/python" Benchmarks/python/verify_apple.py "$work/payloads" 10

echo "== openssl speed ecdsap256 (one core)"
openssl speed -seconds 5 ecdsap256 2>/dev/null | tail -2

echo "== Coffer (ordo-one/benchmark)"
COFFER_PAYLOADS="$work/payloads" swift package --package-path Benchmarks benchmark --target VerificationBenchmarks
