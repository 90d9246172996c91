import CofferAPI
import CofferCore
import CofferStoreKit
import Foundation

extension CofferSDK {
    /// Handles StoreKit's updates (renewals, Ask to Buy approvals, refunds, purchases on other devices) until
    /// the calling task is cancelled. A transaction that cannot be handled now stays unfinished with Apple
    /// and comes back on the next launch; the last failure is kept in ``lastUpdateFailure``.
    public func processUpdates() async {
        let updates = await storeKit.updates()
        isListening = true
        defer { isListening = false }
        for await transaction in updates {
            do {
                try await handle(transaction)
                if !transaction.isVerified, let why = try unverifiedRefusal(transaction.id) {
                    lastUpdateFailure =
                        "\(transaction.id): StoreKit could not verify it and the server refused it: \(why)"
                }
                _ = try await refreshEntitlements()
            } catch {
                lastUpdateFailure = "\(transaction.id): \(error)"
                configuration.log(.warning, .recovery, "update \(transaction.id) left for the next launch: \(error)")
            }
        }
    }

    /// The entitlements now, by the core's rules over every transaction StoreKit reports for the account and the
    /// billing grace periods its renewal info gives (the same function and inputs as the server's): the
    /// latest transaction of each product counts, refunds and revocations clear what is no longer paid,
    /// subscriptions lapse, paid periods build loyalty. Kept on disk, so the next launch shows them before
    /// StoreKit answers (``cachedEntitlements()``), and sent to ``entitlementUpdates()``.
    @discardableResult
    public func refreshEntitlements() async throws -> EntitlementState {
        let entitlements = try await evaluateEntitlements()
        try await recordMilestones(entitlements)
        return entitlements
    }

    /// The entitlements by StoreKit alone, kept and published: no server step, so a launch or a screen whose server
    /// does not answer still shows what StoreKit says now (a subscription that ended since the last run closes the
    /// gate at once, not when the server answers).
    @discardableResult
    func evaluateEntitlements() async throws -> EntitlementState {
        let transactions = await storeKit.all()
        let facts = transactions.map(Self.fact)
        // StoreKit asks by App Store Connect's group id, which the transactions carry; the catalog's group names
        // ("pro") are Coffer's own and find nothing on a device.
        let groups = Set(transactions.compactMap { $0.productType == .autoRenewable ? $0.subscriptionGroupId : nil })
        let grace = groups.isEmpty ? [:] : await storeKit.gracePeriods(groups: groups.sorted())
        // Support's entitlements for a time join what StoreKit's transactions unlock, until they end.
        let entitlements = Entitlements.evaluate(facts, catalog: catalog, gracePeriods: grace, at: now())
            .granting(try grantedEntitlements(), at: now())
        let names = entitlements.names
        try state.set("entitlements", names.joined(separator: "\n"))
        try noteLapses(entitlements, facts: facts)
        if names != lastPublished {
            lastPublished = names
            for continuation in watchers.values { continuation.yield(names) }
            publish(.entitlements(names))
        }
        return entitlements
    }

    /// Records each loyalty lifetime earned with the server, once per customer.
    func recordMilestones(_ entitlements: EntitlementState) async throws {
        // Once per customer: the server records the milestone and says whether this device asks first (the
        // customer's other devices and reinstalls hear "not first"); the answer is kept with the identity, which
        // survives reinstalling. Without an identity yet, or with the server out of reach, it waits for the next
        // refresh.
        if identity != nil {
            for group in Self.loyaltyGroups(entitlements) where try !applied(Self.loyaltyKey(group)) {
                let first: Bool
                do {
                    // `nil`: the server has not heard of every period yet; asked again on the next refresh.
                    guard let answer = try await milestone(group) else { continue }
                    first = answer
                } catch ServerClientError.refused {
                    first = true  // A server without milestones: this device's own record decides.
                } catch {
                    continue
                }
                try remember(Self.loyaltyKey(group))
                guard first else { continue }
                try state.set(Self.celebrationKey(group), "pending")
                publish(.loyaltyLifetimeEarned(group: group))
            }
        }
    }

    /// Publishes ``CofferChange/subscriptionLapsed(group:)`` for each subscription group active at the last refresh
    /// and no longer, unless a refund or revocation ended it.
    func noteLapses(_ entitlements: EntitlementState, facts: [TransactionFact]) throws {
        var active = Set<String>()
        for case .subscription(let productId, _) in entitlements.sources.values.joined() {
            if let group = catalog.product(id: productId)?.group { active.insert(group) }
        }
        let kept = try state.value(Self.subscribedGroupsKey)
        let current = active.sorted().joined(separator: "\n")
        if kept != current { try state.set(Self.subscribedGroupsKey, current) }  // written only when it changes
        guard let kept else { return }
        for group in Set(kept.split(separator: "\n").map(String.init)).subtracting(active).sorted() {
            let latest = facts.filter { catalog.product(id: $0.productId)?.group == group }
                .max { $0.purchaseDate < $1.purchaseDate }
            if latest?.revocationDate == nil { publish(.subscriptionLapsed(group: group)) }
        }
    }

    /// The state's record of the subscription groups active at the last refresh.
    static let subscribedGroupsKey = "subscribedGroups"

    /// Records a group's loyalty milestone with the server, which counts the periods by its own records: when it
    /// has not heard of every period this device counts (a renewal whose notification is still on its way), it
    /// is shown Apple's signed transactions of the group, then asked again.
    ///
    /// - Returns: Whether this device asked first; `nil` while the server still counts fewer periods.
    func milestone(_ group: String) async throws -> Bool? {
        try await signedIn { try await milestone(group, token: $0) }
    }

    func milestone(_ group: String, token: String) async throws -> Bool? {
        if let first = try await askMilestone(group, token: token) { return first }
        let products = Set(catalog.products.filter { $0.group == group }.map(\.id))
        for transaction in await storeKit.all() where products.contains(transaction.productId) {
            // A period the app delivered before Coffer is shown as such: on the ledger, never credited anew.
            let before = try deliveredBeforeCoffer(transaction.id)
            _ = try? await server.post(
                signedTransaction: transaction.jwsRepresentation, previouslyDelivered: before, token: token)
        }
        return try await askMilestone(group, token: token)
    }

    /// The server's answer to a milestone: whether this device asked first, `nil` for `milestone-not-earned`.
    private func askMilestone(_ group: String, token: String) async throws -> Bool? {
        let answer: Result<MilestoneResponse, ServerClientError>
        do {
            answer = .success(try await server.milestone(Self.milestoneName(group), bearer: token))
        } catch {
            answer = .failure(error)
        }
        switch answer {
        case .success(let response): return response.first
        case .failure(.refused(422, let code, _)) where code == "milestone-not-earned": return nil
        case .failure(let error): throw error
        }
    }

    /// The server's name of a group's loyalty milestone: `loyalty:` and the group in the characters it takes.
    static func milestoneName(_ group: String) -> String { LoyaltyRule.milestoneName(group) }

    /// The loyalty lifetimes earned whose celebration the app has not shown yet (``acknowledgeMilestone(_:)``),
    /// so one earned while no screen listened is still shown once.
    public func pendingMilestones() throws -> [String] {
        try catalog.loyalty.map(\.group).filter {
            try state.value(Self.celebrationKey($0)) == "pending"
        }
    }

    /// The app showed the celebration of this group's loyalty lifetime.
    public func acknowledgeMilestone(_ group: String) throws {
        if try state.value(Self.celebrationKey(group)) == "pending" {
            try state.set(Self.celebrationKey(group), "shown")
        }
    }

    static func celebrationKey(_ group: String) -> String { "celebration:\(group)" }

    /// The groups whose loyalty rule unlocks something now.
    static func loyaltyGroups(_ state: EntitlementState) -> [String] {
        var groups: Set<String> = []
        for source in state.sources.values.joined() {
            if case .loyalty(let group, _) = source { groups.insert(group) }
        }
        return groups.sorted()
    }

    /// The key kept with the identity once the group's loyalty lifetime was celebrated.
    static func loyaltyKey(_ group: String) -> String { "loyalty-earned:\(group)" }

    /// The refund check: every refunded or revoked transaction StoreKit reports is taken back once, whether
    /// or not its update was heard: in the device wallet by the local ledger (which knows what it took), in
    /// the server wallet by posting it to the server (which takes it back once and says `revoked`).
    ///
    /// - Returns: How many were taken back now.
    @discardableResult
    public func refundCheck() async throws -> Int {
        var count = 0
        for transaction in await storeKit.all() where transaction.revocationDate != nil {
            guard try await wallet.needsTakingBack(transaction, self) else { continue }
            if try await handle(transaction) { count += 1 }
        }
        return count
    }

    /// The entitlements as last computed, for the first frame after launch (so a gate does not flash).
    public func cachedEntitlements() throws -> [String] {
        guard let text = try state.value("entitlements"), !text.isEmpty else { return [] }
        return text.split(separator: "\n").map(String.init)
    }

    /// The entitlements each time they change, starting with the cached ones: an observable value for the UI.
    public func entitlementUpdates() throws -> AsyncStream<[String]> {
        let (stream, continuation) = AsyncStream.makeStream(of: [String].self)
        let id = UUID()
        watchers[id] = continuation
        continuation.yield(try lastPublished ?? cachedEntitlements())
        continuation.onTermination = { _ in Task { await self.stopWatching(id) } }
        return stream
    }

    func stopWatching(_ id: UUID) { watchers[id] = nil }

    /// One line of the purchase history a Settings screen shows.
    public struct HistoryItem: Sendable, Equatable {
        /// The transaction.
        public var transactionId: String
        /// The product.
        public var productId: String
        /// When it was bought.
        public var purchaseDate: Date
        /// Credits it delivered (0 for what only unlocks something).
        public var credits: Int64
        /// `delivered`, `delivered before Coffer` (by the app, before it used Coffer), `refunded`, `waiting` (not
        /// yet delivered), `not delivered` (finished elsewhere) or `another device` (bought by the app on another
        /// of the customer's devices, another user: delivered there).
        public var status: String
    }

    /// Every transaction of the account, newest first, with what it delivered here. StoreKit's history leaves
    /// out finished consumables (unless the app sets `SKIncludeConsumableInAppPurchaseHistory`), so those come
    /// from this install's ledger and from the server's record of the customer's purchases.
    public func history() async throws -> [HistoryItem] {
        let user = try await localUser()
        let unfinished = Set(await storeKit.unfinished().map(\.id))
        let onServer = await serverPurchases()
        var items: [HistoryItem] = []
        for transaction in await storeKit.all() {
            let receipt = try await ledger.receipt(
                transactionId: transaction.id, environment: configuration.environment)
            // What this install posted, else what the server holds for the customer from another device or an
            // earlier install.
            let serverCredits =
                try state.credits(id: transaction.id)
                ?? onServer[transaction.id].flatMap { $0.status == "pending" ? nil : $0.credits }
            var credits = receipt?.deliveredCredits ?? serverCredits ?? 0
            let status: String
            if try await boughtByAnotherUser(transaction) || state.outcome(id: transaction.id) == Self.wrongUser {
                status = "another device"
                credits = 0
            } else if transaction.revocationDate != nil {
                status = "refunded"
            } else if try receipt?.deliveredBeforeCoffer == true || deliveredBeforeCoffer(transaction.id)
                || onServer[transaction.id]?.deliveredBeforeCoffer == true
            {
                status = Self.deliveredBefore
            } else if receipt?.deliveredAt != nil || serverCredits != nil {
                status = "delivered"
            } else {
                status = unfinished.contains(transaction.id) ? "waiting" : "not delivered"
            }
            items.append(
                HistoryItem(
                    transactionId: transaction.id, productId: transaction.productId,
                    purchaseDate: transaction.purchaseDate, credits: credits, status: status))
        }
        items += try await recordedElsewhere(than: Set(items.map(\.transactionId)), user: user, onServer: onServer)
        return items.sorted { ($0.purchaseDate, $0.transactionId) > ($1.purchaseDate, $1.transactionId) }
    }

    /// What this install's ledger and the server hold for the customer that StoreKit's history does not list.
    func recordedElsewhere(than listed: Set<String>, user: LocalUser, onServer: [String: PurchaseRecord])
        async throws -> [HistoryItem]
    {
        var items: [HistoryItem] = []
        var seen = listed
        for receipt in try await ledger.receipts(owner: user.id, environment: configuration.environment)
        where seen.insert(receipt.transaction.transactionId).inserted {
            let anotherUser = try state.outcome(id: receipt.transaction.transactionId) == Self.wrongUser
            let status =
                anotherUser
                ? "another device"
                : receipt.isRevoked
                    ? "refunded"
                    : receipt.deliveredBeforeCoffer
                        ? Self.deliveredBefore : receipt.deliveredAt != nil ? "delivered" : "waiting"
            items.append(
                HistoryItem(
                    transactionId: receipt.transaction.transactionId, productId: receipt.transaction.productId,
                    purchaseDate: receipt.transaction.purchaseDate,
                    credits: anotherUser ? 0 : receipt.deliveredCredits ?? 0, status: status))
        }
        for record in onServer.values where seen.insert(record.transactionId).inserted {
            let status =
                switch record.status {
                case "revoked": "refunded"
                case "pending": "waiting"
                default: record.deliveredBeforeCoffer == true ? Self.deliveredBefore : "delivered"
                }
            items.append(
                HistoryItem(
                    transactionId: record.transactionId, productId: record.productId,
                    purchaseDate: record.purchaseDate ?? record.deliveredAt ?? .distantPast,
                    credits: record.credits ?? 0, status: status))
        }
        return items
    }

    /// The history's status of a purchase the app delivered before it used Coffer.
    public static let deliveredBefore = "delivered before Coffer"

    /// The purchases the server holds for the customer, by transaction id; none when it is out of reach.
    func serverPurchases() async -> [String: PurchaseRecord] {
        guard let records = try? await signedIn({ try await server.purchases(token: $0) }) else { return [:] }
        return Dictionary(records.map { ($0.transactionId, $0) }) { first, _ in first }
    }

    /// "Verify Purchases": unfinished transactions are delivered now (Apple says they were never fulfilled);
    /// ones delivered but left unfinished are finished; finished ones neither this device nor the server
    /// (what the customer's other devices and earlier installs delivered) has a record of are reported as
    /// could-not-be-verified (contact support with the Support ID). What the app bought on
    /// another of the customer's devices (another user) is that install's to deliver and is left out.
    public func verifyPurchases() async throws -> [ReconciliationItem] {
        let user = try await localUser()
        let unfinished = Set(await storeKit.unfinished().map(\.id))
        var all: [StoreTransaction] = []
        for transaction in await storeKit.all() where try await !boughtByAnotherUser(transaction) {
            all.append(transaction)
        }
        var recorded = Set<String>()
        for transaction in all where try await wallet.holds(transaction.id, for: user, self) {
            recorded.insert(transaction.id)
        }
        // A finished purchase the server holds for the customer was delivered (on another device, or before a
        // reinstall whose balance came back with the backup): recorded, not "could not be verified". An
        // unfinished one is judged by this install's own records, so the device wallet never skips one.
        let onServer = await serverPurchases()
        for transaction in all where !unfinished.contains(transaction.id) {
            if let record = onServer[transaction.id], record.status != "pending" { recorded.insert(transaction.id) }
        }
        // What StoreKit no longer lists (a finished consumable) but this install or the server delivered is
        // recorded too: the results do not depend on StoreKit keeping consumables in its history.
        // What the app delivered before it used Coffer is recorded, online or not.
        for transaction in all where try deliveredBeforeCoffer(transaction.id) { recorded.insert(transaction.id) }
        let elsewhere = try await recordedElsewhere(than: Set(all.map(\.id)), user: user, onServer: onServer)
            .filter { [Self.deliveredBefore, "delivered", "refunded"].contains($0.status) }
        recorded.formUnion(elsewhere.map(\.transactionId))
        let items = Reconciliation.classify(
            all.map {
                DeviceTransaction(
                    transactionId: $0.id, productId: $0.productId, isFinished: !unfinished.contains($0.id))
            }
                + elsewhere.map {
                    DeviceTransaction(transactionId: $0.transactionId, productId: $0.productId, isFinished: true)
                }, recorded: recorded)
        for item in items where item.verdict == .deliverNow || item.verdict == .finishOnly {
            if let transaction = all.first(where: { $0.id == item.transaction.transactionId }) {
                try await handle(transaction)
            }
        }
        // Support sees the results on the customer's page; a server out of reach (or older) misses one report.
        _ = try? await signedIn { try await server.reportVerification(items, bearer: $0) }
        return items
    }
}
