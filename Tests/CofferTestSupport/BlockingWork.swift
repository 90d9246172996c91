import Foundation

/// Runs `body`, which blocks its thread (a child process to wait for, a pipe to read), on a thread of its own.
/// Swift concurrency runs every test on a few threads (two on this machine): a test that blocks one of them
/// stalls every other test in the process, and tests waiting on PostgreSQL, a push or a timer meanwhile miss
/// their deadlines.
public func blockingWork<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try body() }) }.start()
    }
}
