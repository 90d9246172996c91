import CofferStore
import CofferTestSupport
import Foundation
import Synchronization
import Testing

/// The deadline timer on a clock the test moves: an answer past its deadline is the failure, at the deadline and
/// not before, whatever this machine's speed.
@Suite("Deadlines on a clock the test moves", .timeLimit(.minutes(1)))
struct DeadlineTimerTests {
    struct Late: Error, Equatable {}

    @Test("work past its deadline answers the failure once the deadline passes, not before, and is cancelled")
    func late() async throws {
        let clock = TestClock()
        let timer = DeadlineTimer(clock: clock)
        let answered = Mutex(false)
        let workCancelled = Mutex(false)
        let call = Task {
            defer { answered.withLock { $0 = true } }
            return try await timer.run(within: .seconds(5), orThrow: { Late() }) {
                do {
                    try await clock.sleep(for: .seconds(3_600))
                } catch {
                    workCancelled.withLock { $0 = true }
                    throw error
                }
                return 1
            }
        }
        // The timer's tick and the work sleep on the clock.
        await clock.waitForSleepers(2)
        clock.advance(4.9)
        await clock.waitForSleepers(2)
        #expect(!answered.withLock { $0 }, "4.9 seconds in, the deadline has not passed")
        clock.advance(0.35)
        await #expect(throws: Late.self) { try await call.value }
        while !workCancelled.withLock({ $0 }) { await Task.yield() }
    }

    @Test("work that answers in time is the answer")
    func inTime() async throws {
        let clock = TestClock()
        let timer = DeadlineTimer(clock: clock)
        let call = Task {
            try await timer.run(within: .seconds(5), orThrow: { Late() }) {
                try await clock.sleep(for: .seconds(1))
                return 7
            }
        }
        await clock.waitForSleepers(2)
        clock.advance(1)
        #expect(try await call.value == 7)
    }

    @Test("a scheduled action runs once its delay passes on the clock; a cancelled one never runs")
    func schedule() async throws {
        let clock = TestClock()
        let timer = DeadlineTimer(clock: clock)
        let ran = Mutex<[String]>([])
        let later = timer.schedule(after: .seconds(2)) { ran.withLock { $0.append("later") } }
        let dropped = timer.schedule(after: .seconds(1)) { ran.withLock { $0.append("dropped") } }
        #expect(timer.cancel(dropped))
        await clock.waitForSleepers(1)
        clock.advance(1.5)
        await clock.waitForSleepers(1)
        #expect(ran.withLock { $0 }.isEmpty)
        clock.advance(1)
        while ran.withLock({ $0 }).isEmpty { await Task.yield() }
        #expect(ran.withLock { $0 } == ["later"])
        #expect(!timer.cancel(later), "an action that ran is no longer waiting")
    }

    @Test("the caller's cancellation answers CancellationError at once, before any deadline")
    func callerCancelled() async throws {
        let clock = TestClock()
        let timer = DeadlineTimer(clock: clock)
        let call = Task {
            try await timer.run(within: .seconds(5), orThrow: { Late() }) {
                try await clock.sleep(for: .seconds(3_600))
                return 1
            }
        }
        await clock.waitForSleepers(2)
        call.cancel()
        await #expect(throws: CancellationError.self) { try await call.value }
    }
}
