"""Apple's App Store Server Library (Python) verifying the payloads Coffer's benchmark verifies.

Usage: python verify_apple.py PAYLOAD_DIR [SECONDS]
PAYLOAD_DIR holds root.der, transactions.txt and bundle-id.txt, written by VerificationPayloads.
Prints one line: verifications per second, single thread, offline (no OCSP), like Coffer's run.
"""
import sys
import time

from appstoreserverlibrary.models.Environment import Environment
from appstoreserverlibrary.signed_data_verifier import SignedDataVerifier


def main() -> int:
    folder = sys.argv[1]
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 5.0
    root = open(f"{folder}/root.der", "rb").read()
    bundle_id = open(f"{folder}/bundle-id.txt").read().strip()
    payloads = [line for line in open(f"{folder}/transactions.txt").read().split("\n") if line]
    verifier = SignedDataVerifier([root], False, Environment.SANDBOX, bundle_id, None)
    # Every payload must verify: a benchmark of refusals would measure nothing useful.
    for payload in payloads:
        verifier.verify_and_decode_signed_transaction(payload)
    count = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        verifier.verify_and_decode_signed_transaction(payloads[count % len(payloads)])
        count += 1
    elapsed = time.perf_counter() - start
    print(f"apple-python verifications/s: {count / elapsed:.0f} ({count} in {elapsed:.2f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
