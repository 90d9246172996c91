import CofferAPI
import CofferCore
import CofferService
import CofferStore
import CofferTestSupport
import Foundation
import Logging
import Synchronization
import Testing

/// The relay between instances on a clock the test moves: a listening connection that falls silent (half-open) is
/// dropped after three heartbeats and listened on again a second later.
@Suite("Event relay", .timeLimit(.minutes(1)))
struct EventRelayTests {
    /// A broadcast whose listening connection hears nothing, not even the relay's own heartbeats.
    final class SilentBroadcast: EventBroadcast {
        let clock: TestClock
        let listens = Mutex(0)
        let listening = Mutex(0)
        let sent = Mutex<[BroadcastMessage]>([])

        init(clock: TestClock) { self.clock = clock }

        func broadcast(_ message: BroadcastMessage) async throws { sent.withLock { $0.append(message) } }

        func listen(_ deliver: @escaping @Sendable (BroadcastMessage) async -> Void) async throws {
            listens.withLock { $0 += 1 }
            listening.withLock { $0 += 1 }
            defer { listening.withLock { $0 -= 1 } }
            try await clock.sleep(for: .seconds(86_400))
        }
    }

    @Test("a silent listening connection is dropped after three heartbeats, and listened on again a second later")
    func silentConnection() async throws {
        let clock = TestClock()
        let broadcast = SilentBroadcast(clock: clock)
        let relay = EventRelay(
            broadcast: broadcast, logger: Logger(label: "test"), heartbeat: .seconds(15), clock: clock)
        let running = Task { try await relay.run() }
        defer { running.cancel() }
        // Listening, the heartbeat waiting: three heartbeats of silence are not yet enough.
        await clock.waitForSleepers(2)
        for _ in 0..<3 {
            clock.advance(15)
            await clock.waitForSleepers(2)
        }
        #expect(broadcast.listens.withLock { $0 } == 1)
        // The fourth: 60 seconds without a word. The connection is dropped; a second later the relay listens again.
        clock.advance(15)
        while broadcast.listens.withLock({ $0 }) < 2 {
            if broadcast.listening.withLock({ $0 }) == 0, clock.sleepers == 1 { clock.advance(1) }
            await Task.yield()
        }
        #expect(broadcast.sent.withLock { $0 }.filter { $0.kind == "heartbeat" }.count == 4)
    }
}
