import CofferAPI
import CofferCore
import CofferStore
import Foundation

extension ClientService {
    /// The device wallet's mailbox: the ledger entries the app did not make itself (revocations, reversals,
    /// support's adjustments and merges), oldest first, each once by its key; with `currencies`, then those of each
    /// other currency the catalog lists, keyed `<currency>:<key>` (an app from before several currencies, which does
    /// not ask, is never handed gems to apply to its coins).
    public func mailbox(of user: User, currencies: Bool = false) async throws -> [AdjustmentBody] {
        let kinds: Set<LedgerEntryKind> = [.revocation, .reversal, .adjustment, .merge]
        var mailbox = try await store.entries(owner: user.id, environment: user.environment, kinds: kinds)
            .map { Self.adjustment($0, currency: nil) }
        guard currencies else { return mailbox }
        let catalog = dependencies.catalog
        for currency in catalog.currencies.map(\.id) where currency != catalog.defaultCurrency {
            mailbox += try await store.entries(owner: user.id, environment: user.environment, currency: currency)
                .filter { kinds.contains($0.key.kind) }.map { Self.adjustment($0, currency: currency) }
        }
        return mailbox
    }

    /// A ledger entry as the mailbox lists it.
    static func adjustment(_ entry: LedgerEntry, currency: Currency?) -> AdjustmentBody {
        AdjustmentBody(
            key: currency.map { "\($0):\(entry.key.rawValue)" } ?? entry.key.rawValue, kind: entry.key.kind.rawValue,
            amount: entry.amount, transactionId: entry.transactionId, productId: entry.productId, reason: entry.reason,
            createdAt: entry.createdAt, currency: currency?.rawValue)
    }

    /// Every purchase the server recorded for the user (from any of its devices), oldest first: what "Verify
    /// Purchases" and the purchase history compare with, so a new device does not call past purchases unknown.
    public func purchases(of user: User) async throws -> PurchasesResponse {
        PurchasesResponse(
            purchases: try await store.receipts(owner: user.id, environment: user.environment).map { receipt in
                PurchaseRecord(
                    transactionId: receipt.transaction.transactionId, productId: receipt.transaction.productId,
                    status: receipt.status.rawValue, credits: receipt.deliveredCredits,
                    deliveredAt: receipt.deliveredAt, environment: receipt.transaction.environment?.rawValue,
                    purchaseDate: receipt.transaction.purchaseDate,
                    deliveredBeforeCoffer: receipt.deliveredBeforeCoffer ? true : nil)
            })
    }

    /// Opens a stream of what changes for the user (hints: the app refetches what an event names).
    ///
    /// - Parameter address: The client's address: streams are capped per address (IPv6 by /64) too.
    /// - Throws: ``ServiceError/tooManyStreams(_:)`` when the user holds as many as allowed,
    ///   ``ServiceError/rateLimited(retryAfter:what:)`` when the address does,
    ///   ``ServiceError/unavailable(code:message:)`` when the server does.
    public func events(of user: User, address: String? = nil) async throws -> AsyncStream<ServerEventBody> {
        do {
            return try await events.subscribe(user: user.id, address: address)
        } catch .userFull {
            throw ServiceError.tooManyStreams(events.perUser)
        } catch .addressFull {
            throw ServiceError.rateLimited(retryAfter: 30, what: "open event streams")
        } catch {
            throw ServiceError.unavailable(
                code: "unavailable", message: "the server has as many event streams open as it allows; try again later")
        }
    }
}
