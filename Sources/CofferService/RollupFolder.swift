import CofferCore
import CofferStore
import Logging
import ServiceLifecycle

/// Keeps the dashboard's rollups folded on an engine that writes them as contributions
/// (``SupportViewStore/foldRollups()``: PostgreSQL, whose instances write at once): every few seconds, and at once
/// again while a fold finds a large backlog, so a dashboard never adds up more than a few seconds of them. Runs on
/// every instance; one folds at a time.
public struct RollupFolder: Service {
    let store: any CofferStore
    let clock: any TimerClock
    let logger: Logger
    let interval: Duration
    /// A fold that moved this many contributions runs again at once.
    static let backlog = 10_000

    /// A folder of `store`'s rollups every `interval`.
    public init(store: any CofferStore, clock: any TimerClock, logger: Logger, interval: Duration = .seconds(5)) {
        self.store = store
        self.clock = clock
        self.logger = logger
        self.interval = interval
    }

    /// Folds until the service group shuts down; a fold that fails is logged and tried again after the interval.
    public func run() async throws {
        while !Task.isShuttingDownGracefully && !Task.isCancelled {
            do {
                if try await store.foldRollups() >= Self.backlog { continue }
            } catch {
                logger.warning("the dashboard's rollups were not folded; trying again: \(error)")
            }
            try? await cancelWhenGracefulShutdown { try await clock.sleep(for: interval) }
        }
    }
}
