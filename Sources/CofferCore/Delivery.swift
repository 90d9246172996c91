import Foundation

/// What a transaction Apple signed does to the ledger, decided once for the server's routes, the notification
/// intake, the simulator and the SDK.
public enum Delivery {
    /// The event a signed transaction asks for: its revocation when Apple's data already says it was refunded,
    /// otherwise its purchase with the default currency's credits the catalog gives it
    /// (``Catalog/defaultCredits(for:)``; every path applies it in every currency its product gives,
    /// ``Catalog/inEveryCurrency(_:allowances:)``).
    ///
    /// - Throws: ``LedgerError/unknownProduct(_:)`` for a purchase of a product the catalog does not sell (a
    ///   revocation needs no catalog entry: it takes back what was delivered).
    public static func event(for fact: TransactionFact, catalog: Catalog) throws(LedgerError) -> LedgerEvent {
        if fact.revocationDate != nil { return .revocation(fact) }
        return .purchase(fact, credits: try catalog.defaultCredits(for: fact))
    }

    /// Apple's word on a transaction, kept from a notification that arrived before anyone presented it.
    /// Words are ordered by Apple's signing time; at the same instant a reversal comes after the refund it
    /// reverses.
    public struct LaterWord: Sendable, Hashable, Comparable {
        /// What Apple said.
        public enum Kind: Sendable, Hashable {
            /// `REFUND` or `REVOKE`: take it back.
            case revocation
            /// `REFUND_REVERSED`: it is paid again.
            case reversal
        }

        /// What Apple said.
        public var kind: Kind
        /// When Apple signed it.
        public var signedDate: Date

        /// A word of `kind` signed at `signedDate`.
        public init(kind: Kind, signedDate: Date) {
            self.kind = kind
            self.signedDate = signedDate
        }

        /// The word a notification type carries, `nil` for types that do not change whether it is paid.
        public init?(notificationType: String, signedDate: Date) {
            switch notificationType {
            case "REFUND", "REVOKE": self.init(kind: .revocation, signedDate: signedDate)
            case "REFUND_REVERSED": self.init(kind: .reversal, signedDate: signedDate)
            default: return nil
            }
        }

        /// Whether `a` was said before `b`.
        public static func < (a: LaterWord, b: LaterWord) -> Bool {
            (a.signedDate, a.kind == .reversal ? 1 : 0) < (b.signedDate, b.kind == .reversal ? 1 : 0)
        }
    }

    /// The events for a transaction an app presents: its purchase, or its revocation when it is signed refunded,
    /// unless Apple said otherwise later in notifications kept while nobody had presented it. The latest word by
    /// Apple's signing time decides (at the same instant a notification is later than the presented snapshot,
    /// and a reversal later than the refund it reverses): a revocation the snapshot does not show takes the
    /// purchase back; a reversal of the refund the snapshot shows delivers it.
    ///
    /// - Parameters:
    ///   - fact: The presented transaction.
    ///   - signedAt: When Apple signed it.
    ///   - credits: What its purchase delivers (``Catalog/defaultCredits(for:)``).
    ///   - later: Apple's kept words on it.
    public static func events(
        forPresented fact: TransactionFact, signedAt: Date?, credits: Int64, later: [LaterWord]
    ) -> [LedgerEvent] {
        guard let latest = later.max(), signedAt.map({ latest.signedDate >= $0 }) ?? true else {
            return [fact.revocationDate == nil ? .purchase(fact, credits: credits) : .revocation(fact)]
        }
        if latest.kind == .reversal {
            var paid = fact
            paid.revocationDate = nil
            return [.purchase(paid, credits: credits)]
        }
        guard fact.revocationDate == nil else { return [.revocation(fact)] }
        var revoked = fact
        revoked.revocationDate = latest.signedDate
        return [.purchase(fact, credits: credits), .revocation(revoked)]
    }

    /// What Apple's word does to a transaction someone already owns: a revocation takes it back; a reversal
    /// restores what the revocation took and, for a purchase refunded before it was ever delivered, delivers it.
    ///
    /// - Parameters:
    ///   - word: What Apple said, and when.
    ///   - fact: The transaction, as Apple signed it in the word or as presented.
    ///   - credits: What its purchase delivers, `nil` when it was delivered before (or the catalog does not
    ///     sell it): then a reversal only restores.
    public static func events(for word: LaterWord, on fact: TransactionFact, credits: Int64?) -> [LedgerEvent] {
        switch word.kind {
        case .revocation:
            var revoked = fact
            revoked.revocationDate = fact.revocationDate ?? word.signedDate
            return [.revocation(revoked)]
        case .reversal:
            var paid = fact
            paid.revocationDate = nil
            return [.reversal(paid, at: word.signedDate)] + (credits.map { [.purchase(paid, credits: $0)] } ?? [])
        }
    }

    /// The events that repeat on a device wallet what the server's ledger did (the device wallet's mailbox):
    /// a revocation or reversal of a purchase this install holds is applied as Apple's word on it (so a refund
    /// takes back what this install delivered, a deficit for what was spent); anything else is an adjustment by
    /// the entry's amount, a take-back limited to what the balance holds (a refund of a purchase bought before
    /// a reinstall takes what it can).
    ///
    /// - Parameters:
    ///   - kind: The server entry's kind (`nil` when this SDK does not know it).
    ///   - key: The server entry's key, the device entry's id.
    ///   - amount: The server entry's amount.
    ///   - reason: Why, as the server recorded it.
    ///   - date: When the server applied it (after the refund a reversal reverses, by Apple's dates).
    ///   - receipt: This install's receipt of the entry's transaction, if any.
    ///   - balance: The device wallet's balance.
    ///   - catalog: The app's catalog, for a purchase a reversal delivers.
    public static func mirrored(
        kind: LedgerEntryKind?, key: String, amount: Int64, reason: String, at date: Date, receipt: Receipt?,
        balance: Int64, catalog: Catalog
    ) -> [LedgerEvent] {
        switch (kind, receipt) {
        case (.revocation, let receipt?):
            return events(for: LaterWord(kind: .revocation, signedDate: date), on: receipt.transaction, credits: nil)
        case (.reversal, let receipt?) where receipt.isRevoked:
            // The default currency's credits: applied in every currency, the purchase gives each its own.
            let credits = receipt.deliveredCredits == nil ? try? catalog.defaultCredits(for: receipt.transaction) : nil
            return events(for: LaterWord(kind: .reversal, signedDate: date), on: receipt.transaction, credits: credits)
        default:
            let delta = amount < 0 ? max(amount, -max(0, balance)) : amount
            return delta == 0 ? [] : [.adjustment(id: key, delta: delta, reason: reason)]
        }
    }

    /// Whether Apple's data of environment `data` may reach a customer whose own AppTransaction says `customer`
    /// (`nil`: an install registered without one). Sandbox data never reaches a customer whose AppTransaction
    /// says Production: any TestFlight tester makes Sandbox purchases for free, and its renewals come every few
    /// minutes. A TestFlight or App Review install (Sandbox AppTransaction) and one registered without an
    /// AppTransaction take it, as App Review needs.
    public static func reaches(data: AppStoreEnvironment?, customer: AppStoreEnvironment?) -> Bool {
        !(data == .sandbox && customer == .production)
    }

    /// What delivering a transaction came to, as the app is told.
    public enum Outcome: String, Sendable, Hashable {
        /// Credited now.
        case delivered
        /// Credited before; nothing changed.
        case duplicate
        /// Refunded or revoked: nothing credited (or taken back).
        case revoked
    }

    /// The outcome of applying `events` for one transaction, given what the ledger answered for the first:
    /// revoked when Apple's last word among them is a revocation.
    public static func outcome(of events: [LedgerEvent], ledger: LedgerOutcome) -> Outcome {
        let word = events.last { event in
            switch event {
            case .revocation, .reversal: true
            default: false
            }
        }
        let revoked = if case .revocation = word { true } else { false }
        switch (revoked, ledger) {
        case (true, _), (false, .revoked): return .revoked
        case (false, .duplicate), (false, .superseded): return .duplicate
        case (false, .applied): return .delivered
        }
    }
}
