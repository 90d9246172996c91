import Foundation

/// What a transaction Apple signed does to the ledger, decided once for the server's routes, the notification
/// intake, the simulator and the SDK.
public enum Delivery {
    /// The event a signed transaction asks for: its revocation when Apple's data already says it was refunded,
    /// otherwise its purchase with the credits the catalog gives it.
    ///
    /// - Throws: ``LedgerError/unknownProduct(_:)`` for a purchase of a product the catalog does not sell (a
    ///   revocation needs no catalog entry: it takes back what was delivered).
    public static func event(for fact: TransactionFact, catalog: Catalog) throws(LedgerError) -> LedgerEvent {
        if fact.revocationDate != nil { return .revocation(fact) }
        return .purchase(fact, credits: try catalog.credits(for: fact))
    }

    /// Apple's word on a transaction, kept from a notification that arrived before anyone presented it.
    public struct LaterWord: Sendable, Hashable {
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
    ///   - credits: What its purchase delivers (``Catalog/credits(for:)``).
    ///   - later: Apple's kept words on it.
    public static func events(
        forPresented fact: TransactionFact, signedAt: Date?, credits: Int64, later: [LaterWord]
    ) -> [LedgerEvent] {
        let order = { (word: LaterWord) in (word.signedDate, word.kind == .reversal ? 1 : 0) }
        let latest = later.max { order($0) < order($1) }
        guard let latest, signedAt.map({ latest.signedDate >= $0 }) ?? true else {
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

    /// What delivering a transaction came to, as the app is told.
    public enum Outcome: String, Sendable, Hashable {
        /// Credited now.
        case delivered
        /// Credited before; nothing changed.
        case duplicate
        /// Refunded or revoked: nothing credited (or taken back).
        case revoked
    }

    /// The outcome of applying `events` for one transaction, given what the ledger answered for the first.
    public static func outcome(of events: [LedgerEvent], ledger: LedgerOutcome) -> Outcome {
        let revoked = events.contains { event in
            if case .revocation = event { true } else { false }
        }
        switch (revoked, ledger) {
        case (true, _), (false, .revoked): return .revoked
        case (false, .duplicate), (false, .superseded): return .duplicate
        case (false, .applied): return .delivered
        }
    }
}

extension Catalog {
    /// The credits a transaction's purchase delivers: the product's credits times its quantity, none when it
    /// came through Family Sharing.
    ///
    /// - Throws: ``LedgerError/unknownProduct(_:)`` or ``LedgerError/invalidAmount(_:)``.
    public func credits(for fact: TransactionFact) throws(LedgerError) -> Int64 {
        try credits(productId: fact.productId, quantity: fact.quantity, familyShared: fact.isFamilyShared)
    }
}
