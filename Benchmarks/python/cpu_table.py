#!/usr/bin/env python3
"""Where a delivery's CPU goes: reads `perf script` output (call graphs, demangled) on standard input and prints
a table of the share of samples in each part of the delivery path, and the microseconds per delivery when the
server's CPU per delivery is given.

    perf script -i perf.data | swift demangle --simplified | Benchmarks/python/cpu_table.py [MICROSECONDS]

Each sample counts once, in the first part (in the order below) one of its stack's frames belongs to.
"""
import collections
import re
import sys

PARTS = [
    ("ES256 signature check", r"isValidSignature"),
    ("payload decoding (strict JSON)", r"AppleJSON\.decode|StrictJSON"),
    ("rest of verification (JWS split, chain cache)", r"SignedDataVerifier\.verify|JWS\.init|ChainVerifier|ChainCache"),
    ("request body decoding", r"ClientAPI\.decode"),
    ("ledger write: statements", r"LedgerWriter\.apply|LoadLedgerBatch|SaveLedgerBatch"),
    ("ledger write: commit (WAL, checkpoint)", r"Database\.commit|DatabaseWriter\.write|SQLiteStore\.apply|writeWithoutTransaction"),
    ("ledger batcher", r"LedgerBatcher"),
    ("reads through GRDB's pool", r"SQLiteStore\.read|DatabasePool\.read"),
    ("response JSON encoding", r"JSONEncoder|jsonText"),
    ("request timeout", r"Task<>\._sleep|TimeoutMiddleware|DeadlineTimer|_dispatch_mgr|dispatch_after"),
    ("request log and metrics", r"RequestLogMiddleware\.record|ServerMetrics|Prometheus|Logger"),
    ("authentication (token hash, cache)", r"authenticate"),
    ("PostgreSQL client (PostgresNIO)", r"PostgresNIO|PostgresConnection|PSQL|PostgresClient"),
    ("NIO event loop (sockets, HTTP parsing)", r"SelectableEventLoop|NIOAsyncChannel|HTTPChannelHandler|ChannelPipeline"),
    ("scheduling (kernel context switches, futex)", r"__schedule|futex|finish_task_switch"),
    ("Swift concurrency runtime and handlers", r"swift_task|swift::AsyncTask|swift_job|Concurrency"),
]


def stacks(lines):
    """Yields (frames, 1) for each sample of `perf script` output."""
    frames = []
    for line in lines:
        if not line.strip():
            if frames:
                yield frames
            frames = []
        elif line[0] in " \t":
            parts = line.strip().split(" ", 1)
            if len(parts) == 2:
                frames.append(parts[1].rsplit(" (", 1)[0])
        else:
            if frames:
                yield frames
            frames = []
    if frames:
        yield frames


def main():
    per_delivery = float(sys.argv[1]) if len(sys.argv) > 1 else 0
    patterns = [(name, re.compile(pattern)) for name, pattern in PARTS]
    counts = collections.Counter()
    total = 0
    for frames in stacks(sys.stdin):
        total += 1
        for name, pattern in patterns:
            if any(pattern.search(frame) for frame in frames):
                counts[name] += 1
                break
        else:
            counts["other"] += 1
    print("| part | share of samples |" + (" µs per delivery |" if per_delivery else ""))
    print("|---|---|" + ("---|" if per_delivery else ""))
    for name in [name for name, _ in PARTS] + ["other"]:
        share = counts[name] / max(1, total)
        row = f"| {name} | {100 * share:.1f}% |"
        if per_delivery:
            row += f" {per_delivery * share:.0f} |"
        print(row)
    print(f"({total} samples)")


if __name__ == "__main__":
    main()
