import CofferCore
import CofferStore

/// What the application layer's services are built from, shared by all of them in one server: its settings,
/// its dependencies, the users' event streams and the ledger's group commit.
public struct ServiceParts: Sendable {
    /// How the server runs.
    public let configuration: ServiceConfiguration
    /// What it is made of.
    public let dependencies: ServerDependencies
    /// The users' event streams, told what changed.
    public let events: EventHub
    /// Group commit: every ledger write goes through it.
    public let ledger: LedgerBatcher

    /// The parts of a server with `configuration` over `dependencies`.
    public init(
        configuration: ServiceConfiguration, dependencies: ServerDependencies, events: EventHub, ledger: LedgerBatcher
    ) {
        self.configuration = configuration
        self.dependencies = dependencies
        self.events = events
        self.ledger = ledger
    }
}

/// A service built from ``ServiceParts``.
public protocol ServiceOnParts: Sendable {
    /// What it is built from.
    var parts: ServiceParts { get }
}

extension ServiceOnParts {
    /// How the server runs.
    public var configuration: ServiceConfiguration { parts.configuration }
    /// What it is made of.
    public var dependencies: ServerDependencies { parts.dependencies }
    /// The users' event streams.
    public var events: EventHub { parts.events }
    /// Group commit.
    public var ledger: LedgerBatcher { parts.ledger }
    /// Where users and the ledger live.
    public var store: any CofferStore { parts.dependencies.store }
}

extension ServiceOnParts {
    /// In the server wallet, tells Apple a purchase whose delivery is now durable is finished (Finish
    /// Transaction), so a device that died before finishing it is not handed it again. Runs beside the answer
    /// (Apple's latency never holds a delivery up); a failure is logged: the app still finishes it when it can.
    func finishOnApple(_ fact: TransactionFact, user: User) {
        guard configuration.wallet == .server, let client = dependencies.appStoreAPI,
            (fact.environment ?? user.environment) == user.environment
        else { return }
        let (id, logger) = (fact.transactionId, dependencies.logger)
        Task {
            do {
                try await client.finishTransaction(id)
            } catch {
                logger.warning("Finish Transaction failed for \(id): \(error)")
            }
        }
    }
}
