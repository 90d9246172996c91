import CofferCore
import CofferStore
import Foundation
import Logging
import ServiceLifecycle

/// Ends credits whose end has come (``CreditLot``), every `expiryInterval` seconds: what is left of each leaves the
/// balance by its `expiry:<id>` entry, once, on every instance alike (the entry's key and the lot's row lock keep two
/// instances from ending one lot twice). A customer's own reads and spends end theirs first anyway; the sweep ends
/// the rest, so the ledger, the webhooks and support's pages say so soon after.
public struct CreditExpiry: Service {
    let store: any CofferStore
    let environment: AppStoreEnvironment
    let interval: Int
    let now: @Sendable () -> Date
    let clock: any TimerClock
    let logger: Logger

    /// How many lots one commit ends.
    static let batch = 500

    /// The sweep of `configuration`'s environment over `dependencies`' store; `nil` when the interval is 0.
    public init?(configuration: ServiceConfiguration, dependencies: ServerDependencies) {
        guard configuration.expiryInterval > 0 else { return nil }
        store = dependencies.store
        environment = configuration.environment
        interval = configuration.expiryInterval
        now = dependencies.now
        clock = dependencies.timerClock
        logger = dependencies.logger
    }

    /// Ends every lot due now, a batch a commit.
    ///
    /// - Returns: How many lots ended.
    public func runOnce() async throws -> Int {
        var ended = 0
        while true {
            let count = try await store.expireCredits(
                environment: environment, owner: nil, at: now(), limit: Self.batch)
            ended += count
            guard count == Self.batch else { return ended }
        }
    }

    /// The scheduled sweeps, until the server shuts down.
    public func run() async throws {
        while !Task.isShuttingDownGracefully && !Task.isCancelled {
            do {
                try await cancelWhenGracefulShutdown { try await clock.sleep(for: .seconds(interval)) }
            } catch {
                return  // shutting down
            }
            do {
                let ended = try await runOnce()
                if ended > 0 { logger.info("credits expired", metadata: ["lots": "\(ended)"]) }
            } catch {
                logger.error("ending expired credits failed; it runs again at the next interval: \(error)")
            }
        }
    }
}
