import CofferAPI
import CofferCore
import CofferStore
import Foundation

/// Everything support does, one implementation for the panel, the admin API and the local CLI: find users,
/// read their story, grant credits, set balances, clean up Sandbox, and record each change in the audit log.
public struct AdminService: Sendable {
    /// Finds the transaction ids of a customer's order id (Apple's Look Up Order ID); `nil` when the server has
    /// no App Store Server API key.
    public typealias OrderLookup =
        @Sendable (_ orderId: String, _ environment: AppStoreEnvironment) async throws -> [String]

    /// The store.
    public let store: any CofferStore
    /// The app's products, for entitlements.
    public let catalog: Catalog
    /// Who owns the running balance.
    public let walletMode: WalletMode
    /// The clock.
    public let now: @Sendable () -> Date
    /// Order id lookup, when configured.
    public let orderLookup: OrderLookup?
    /// Get App Transaction Info for an app transaction id, verified, when configured.
    public var appTransactionLookup: AppTransactionLookup?
    /// Apple's renewal extensions; configured only with an App Store Server API key.
    public var renewalExtensions: RenewalExtensions?

    /// Reads the customer's app transaction from Apple (Get App Transaction Info), or throws when Apple did not
    /// answer; configured only with an App Store Server API key.
    public typealias AppTransactionLookup =
        @Sendable (_ appTransactionId: String, _ environment: AppStoreEnvironment) async throws -> AppTransactionView
    /// Told after each change an app should hear of at once (the server turns it into an event on the
    /// user's stream).
    public let onChange: ChangeObserver?

    /// A change to one user an app should hear of.
    public enum Change: Sendable, Equatable {
        /// A grant was created for the user.
        case grant(id: UUID)
        /// The server wallet's ledger took an adjustment, under this ledger key.
        case adjustment(key: String)
        /// Support wrote the device wallet's backup; this is its version.
        case backup(version: Int64)
        /// Support merged this (anonymous) user into another: its token names that user now.
        case merged
        /// Support deleted the customer at their request: their tokens sign in no more.
        case deleted
        /// Support granted or cancelled an entitlement for a time (this grant).
        case entitlements(grant: UUID)
    }

    /// Receives ``Change``s with the id of the user they are about.
    public typealias ChangeObserver = @Sendable (_ user: UUID, _ change: Change) async -> Void

    /// How many purchases a customer's page shows, newest first.
    public static let purchaseLimit = 200

    /// How many items a timeline shows.
    public static let timelineLimit = 500

    /// Creates the service.
    public init(
        store: any CofferStore,
        catalog: Catalog,
        walletMode: WalletMode,
        now: @escaping @Sendable () -> Date = { Date() },
        orderLookup: OrderLookup? = nil,
        onChange: ChangeObserver? = nil
    ) {
        self.store = store
        self.catalog = catalog
        self.walletMode = walletMode
        self.now = now
        self.orderLookup = orderLookup
        self.onChange = onChange
    }

    // MARK: Reading

    /// The dashboard: totals and 30 days of purchases and refunds.
    public func dashboard(environment: AppStoreEnvironment) async throws -> DashboardFigures {
        var figures = try await store.dashboard(environment: environment, days: 30, now: now())
        // Only the catalog's loyalty groups count: any app user can post a milestone of any name.
        let prefix = DashboardFigures.loyaltyMilestonePrefix
        figures.loyaltyLifetimes = catalog.loyalty.map { rule in
            let name = String(LoyaltyRule.milestoneName(rule.group).dropFirst(prefix.count))
            return GroupCount(
                group: rule.group, count: figures.loyaltyLifetimes.first { $0.group == name }?.count ?? 0)
        }
        return figures
    }

    /// Apple's health for the dashboard: the newest notification, the last 7 days' by type, the recovery
    /// service's last run and the reconciliation's.
    public func appleHealth(environment: AppStoreEnvironment) async throws -> AppleHealth {
        let last = try await store.notifications(environment: environment, transactionId: nil, outcome: nil, limit: 1)
        let counts = try await store.notificationCounts(
            environment: environment, since: now().addingTimeInterval(-7 * 86_400))
        let recovery = try await store.cursor(RecoveryRun.cursorName, environment: environment).flatMap(
            RecoveryRun.init(text:))
        return AppleHealth(
            lastNotification: last.first,
            lastWeek: counts.sorted { ($0.value, $1.key) > ($1.value, $0.key) }.map {
                AppleHealth.TypeCount(type: $0.key, count: $0.value)
            },
            recovery: recovery,
            reconciliation: try await store.cursor(ReconciliationRun.cursorName, environment: environment).flatMap(
                ReconciliationRun.init(text:)))
    }

    /// The pages a user search may ask for: far more than any list, small enough that no offset overflows.
    public static let pages = 1...1_000_000

    private static let pageError = AdminError.invalid("page must be a whole number from 1 to 1000000")

    /// Reads a `page` parameter from a query: absent means 1; anything but a whole number in ``pages`` is
    /// refused.
    public static func page(_ text: String?) throws(AdminError) -> Int {
        guard let text else { return 1 }
        guard text.utf8.count <= 7, let page = Int(text), pages.contains(page) else { throw pageError }
        return page
    }

    /// Users matching a query: a Support ID prefix (case-insensitive, the leading `_` optional), a transaction
    /// or original transaction id, or an order id; everyone, newest first, without one. With `sandboxMarkedOnly`,
    /// only the Sandbox-marked customers (``CustomerScope``).
    public func searchUsers(
        environment: AppStoreEnvironment, query: String?, page: Int = 1, pageSize: Int = 25,
        sandboxMarkedOnly: Bool = false
    ) async throws -> UserSearchResult {
        guard Self.pages.contains(page) else { throw Self.pageError }
        let pageSize = min(max(1, pageSize), 200)
        let text = (query ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
        guard text.utf8.count <= 200 else { throw AdminError.invalid("the search is longer than 200 characters") }
        if text.isEmpty || Self.isSupportIdPrefix(text) {
            let prefix = text.isEmpty ? nil : (text.hasPrefix("_") ? text : "_" + text).lowercased()
            let users =
                sandboxMarkedOnly
                ? try await store.sandboxMarkedUsers(
                    environment: environment, supportIdPrefix: prefix, limit: pageSize + 1,
                    offset: (page - 1) * pageSize)
                : try await store.users(
                    environment: environment, supportIdPrefix: prefix, limit: pageSize + 1,
                    offset: (page - 1) * pageSize)
            // A text that is also a transaction or order id is looked up as one when no Support ID matches.
            if !users.isEmpty || prefix == nil || page > 1 {
                return UserSearchResult(
                    users: try await summaries(users.prefix(pageSize)), matchedBy: prefix == nil ? .all : .supportId,
                    page: page, hasMore: users.count > pageSize)
            }
        }
        // A customer from before the move to Coffer quotes their old Support ID: the CloudKit user record name.
        if Self.isExternalId(text),
            let imported = try await store.importedCustomer(
                source: Self.cloudKitSource, externalId: text, environment: environment),
            let user = try await store.user(id: imported.user)
        {
            return UserSearchResult(
                users: try await summaries(inScope([user], sandboxMarkedOnly)), matchedBy: .cloudKitRecordName,
                page: 1, hasMore: false)
        }
        if text.allSatisfy(\.isNumber) {
            let owners = try await inScope(
                owners(ofTransactions: [text], environment: environment), sandboxMarkedOnly)
            if !owners.isEmpty {
                return UserSearchResult(
                    users: try await summaries(owners), matchedBy: .transactionId, page: 1, hasMore: false)
            }
        }
        if let orderLookup, text.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) }) {
            let transactionIds: [String]
            do {
                transactionIds = try await orderLookup(text, environment)
            } catch let error as AdminError {
                throw error
            } catch {
                throw AdminError.unavailable("Apple's order lookup did not answer: \(error)")
            }
            let owners = try await inScope(
                owners(ofTransactions: transactionIds, environment: environment), sandboxMarkedOnly)
            return UserSearchResult(users: try await summaries(owners), matchedBy: .orderId, page: 1, hasMore: false)
        }
        return UserSearchResult(users: [], matchedBy: .nothing, page: 1, hasMore: false)
    }

    /// One user's figures, entitlements, grants and timeline.
    public func user(environment: AppStoreEnvironment, supportId: String) async throws -> UserDetail {
        let user = try await find(supportId, environment: environment)
        // Support never sees credits past their end (the sweep may not have reached them yet).
        if walletMode == .server {
            _ = try await store.endingDueCredits(owner: user.id, environment: environment, at: now())
        }
        let summary = try await summary(user)
        let grants = try await store.grants(environment: environment, recipient: user.id, status: nil, limit: 200)
        let entries = try await store.entries(owner: user.id, environment: environment)
        let backups = try await store.backupHistory(owner: user.id, environment: environment, limit: 200)
        let audit = try await store.auditEvents(
            environment: environment, subject: user.supportId.rawValue, limit: 200)
        let receipts = try await store.receipts(owner: user.id, environment: environment)
        let refundReasons = Dictionary(
            receipts.compactMap { receipt in
                Payment.revocationReasonText(receipt.transaction.revocationReason).map {
                    (receipt.transaction.transactionId, $0)
                }
            }, uniquingKeysWith: { first, _ in first })
        var timeline = entries.map { entry in
            var item = Self.item(entry, environment: environment, catalog: catalog)
            if entry.key.kind == .revocation, let id = entry.transactionId, let reason = refundReasons[id] {
                item.summary += ". \(reason)"
            }
            return item
        }
        // Every other currency the customer holds: its figures, and its entries in the timeline, named.
        let currencyWallets = try await store.currencyWallets(owner: user.id, environment: environment)
        for currency in currencyWallets.keys.sorted() {
            for entry in try await store.entries(owner: user.id, environment: environment, currency: currency) {
                var item = Self.item(entry, environment: environment, catalog: catalog)
                item.summary = "\(catalog.currencyName(currency)): " + item.summary
                item.currency = currency.rawValue
                timeline.append(item)
            }
        }
        // The history of the installs support merged into this customer is this customer's too.
        for merged in try await store.users(mergedInto: user.id) where merged.environment == environment {
            for entry in try await store.entries(owner: merged.id, environment: environment)
            where entry.key.kind != .merge {
                var item = Self.item(entry, environment: environment, catalog: catalog)
                item.summary = "\(merged.supportId) (merged here): " + item.summary
                item.balanceAfter = nil
                timeline.append(item)
            }
        }
        for grant in grants {
            timeline.append(
                TimelineItem(
                    at: grant.createdAt, kind: .grantCreated,
                    summary: "\(grant.createdBy) granted \(PanelText.credits(grant.credits)) credits: \(grant.reason)",
                    reference: grant.id.uuidString.lowercased()))
            if let cancelledAt = grant.cancelledAt {
                timeline.append(
                    TimelineItem(
                        at: cancelledAt, kind: .grantCancelled,
                        summary:
                            "\(grant.cancelledBy ?? "?") cancelled the grant of \(PanelText.credits(grant.credits)) "
                            + "credits before the app claimed it: \(grant.reason)",
                        reference: grant.id.uuidString.lowercased()))
            }
        }
        timeline += backups.map { item in
            let record = item.record
            // The other currencies it holds (`, with 40 Gems`).
            let others = record.currencies.sorted { $0.key < $1.key }.map {
                "\(PanelText.credits($0.value.balance)) \(catalog.currencyName($0.key))"
            }
            let with = others.isEmpty ? "" : ", with " + others.joined(separator: ", ")
            let summary =
                switch record.writer {
                case .device(let name):
                    "Backup of \(PanelText.credits(record.value))\(with) from \(name) (version \(record.version))"
                case .admin(let name):
                    "\(name) set the backed-up balance to \(PanelText.credits(record.value))\(with) "
                        + "(version \(record.version))"
                }
            return TimelineItem(
                at: record.lastUpdated, kind: .backup, summary: summary,
                credits: item.previousValue.map { record.value - $0 }, balanceAfter: record.value)
        }
        timeline += audit.filter { !Self.shownElsewhere.contains($0.action) }.map { event in
            TimelineItem(
                at: event.at, kind: .admin, summary: Self.timelineSummary(event) ?? "\(event.actor): \(event.action)")
        }
        timeline.sort { ($0.at, $0.kind.rawValue) > ($1.at, $1.kind.rawValue) }
        var mergedInto: String?
        if let id = user.mergedInto { mergedInto = try await store.user(id: id)?.supportId.rawValue }
        let subscriptionProducts = Set(catalog.products.filter { $0.kind == .autoRenewable }.map(\.id))
        let subscriptions = SubscriptionSummary.groups(
            receipts: receipts.filter { subscriptionProducts.contains($0.transaction.productId) },
            renewals: try await store.renewalStates(owner: user.id, environment: environment), catalog: catalog,
            at: now())
        var detail = UserDetail(
            user: summary, environment: environment, walletMode: walletMode,
            entitlements: try await store.entitlements(of: user, catalog: catalog, at: now()),
            grants: grants.map { GrantView($0, supportId: user.supportId.rawValue) },
            timeline: Array(timeline.prefix(Self.timelineLimit)), appleAccount: user.appleAccount,
            sandboxMarked: SandboxMark.holds(user, receipts: receipts),
            mergedInto: mergedInto, subscriptions: subscriptions,
            purchases: receipts.suffix(Self.purchaseLimit).reversed().map { PurchaseView($0, catalog: catalog) },
            verifyReport: try await store.verifyReport(owner: user.id, environment: environment).map {
                VerifyReportView(reportedAt: $0.reportedAt, items: $0.items)
            })
        detail.refundRequests = try await store.consumptionAnswers(owner: user.id, environment: environment, limit: 20)
            .map {
                RefundRequestView(
                    requestedAt: $0.requestedAt, transactionId: $0.transactionId, sent: $0.sent, answer: $0.body,
                    reason: $0.reason)
            }
        if let account = user.appleAccount, let lookup = appTransactionLookup {
            // Apple's word now; a page without it still answers (the panel says Apple did not).
            detail.appTransaction = try? await Self.within(seconds: 3) {
                try await lookup(account.appTransactionId, account.environment)
            }
        }
        var wallets = [catalog.defaultCurrency: Wallet(balance: summary.balance, deficit: summary.deficit)]
        for other in catalog.currencies.dropFirst() { wallets[other.id] = .empty }
        wallets.merge(currencyWallets) { $1 }
        detail.balances = Dictionary(uniqueKeysWithValues: wallets.map { ($0.key.rawValue, $0.value.balance) })
        detail.deficits = Dictionary(uniqueKeysWithValues: wallets.map { ($0.key.rawValue, $0.value.deficit) })
        detail.entitlementGrants = try await entitlementGrantViews(of: user, environment: environment)
        detail.discrepancies = try await discrepancyViews(of: user, environment: environment)
        detail.consent = try await store.consumptionConsent(owner: user.id, environment: environment).map {
            ConsentResponse(customerConsented: $0.consented, at: $0.at.formatted(.iso8601))
        }
        return detail
    }

    /// `body`'s answer, or an error when it has none within `seconds`: a page never waits long on Apple.
    static func within<T: Sendable>(seconds: Double, _ body: @escaping @Sendable () async throws -> T) async throws
        -> T
    {
        try await withThrowingTaskGroup(of: T.self) { group in
            group.addTask { try await body() }
            group.addTask {
                try await Task.sleep(for: .seconds(seconds))
                throw AdminError.invalid("no answer within \(seconds) seconds")
            }
            defer { group.cancelAll() }
            guard let first = try await group.next() else { throw AdminError.invalid("no answer") }
            return first
        }
    }

    /// Grants of an environment, newest first.
    public func grants(environment: AppStoreEnvironment, status: GrantStatus?, limit: Int = 200) async throws
        -> [GrantView]
    {
        try await views(
            of: store.grants(
                environment: environment, recipient: nil, status: status, limit: min(max(1, limit), 1_000)))
    }

    /// Grants as the panel and the admin API show them, with their recipients' Support IDs.
    func views(of grants: [Grant]) async throws -> [GrantView] {
        // The recipients in one read, not one a grant.
        let recipients = try await store.users(ids: Set(grants.map(\.recipient)))
        let supportIds = Dictionary(
            recipients.map { ($0.id, $0.supportId.rawValue) }, uniquingKeysWith: { first, _ in first })
        return grants.map { GrantView($0, supportId: supportIds[$0.recipient] ?? "?") }
    }

    /// The audit log, newest first: all of it, or what `query` asks for (an admin, a customer, an action).
    public func auditLog(environment: AppStoreEnvironment, query: AuditQuery = AuditQuery(), limit: Int = 200)
        async throws
        -> [AuditEvent]
    {
        for text in [query.subject, query.admin, query.action].compactMap({ $0 }) where text.utf8.count > 200 {
            throw AdminError.invalid("a filter has at most 200 characters")
        }
        return try await store.auditEvents(
            environment: environment, query: query, limit: min(max(1, limit), Self.auditExportLimit))
    }

    /// The most audit events one read or export gives.
    public static let auditExportLimit = 10_000

    /// A customer's history for a support ticket or a data request (App Store guideline 5.1.1): everything
    /// support sees of them, as ``UserDetail``, recorded in the audit log as `customer.export`.
    public func exportUser(environment: AppStoreEnvironment, supportId: String, format: String, actor: String)
        async throws
        -> UserDetail
    {
        let detail = try await user(environment: environment, supportId: supportId)
        try await audit(
            environment, actor: actor, action: "customer.export", subject: detail.user.supportId,
            after: ["format": format])
        return detail
    }

    // MARK: Changing

    /// Deletes a customer at their request (App Store guideline 5.1.1(v)), once: the wallet is closed by a
    /// ledger entry, the tokens, push tokens, backups, the Apple account link and every free-text reason are
    /// removed, pending grants are cancelled; the receipts and the ledger's amounts stay, anonymised, so no
    /// transaction is ever credited twice and the totals add up. The app's token stops working at once on this
    /// instance (within the token cache's 5 seconds on others).
    /// Audited `customer.delete`.
    ///
    /// - Throws: ``AdminError/notFound(_:)`` for an unknown Support ID; ``AdminError/invalid(_:)`` for one
    ///   merged into another customer (delete that one) or deleted already.
    public func deleteUser(environment: AppStoreEnvironment, supportId: String, actor: String) async throws
        -> DeletionView
    {
        if let deletedAt = try await find(supportId, environment: environment).deletedAt {
            throw AdminError.invalid("\(supportId) was deleted already, on \(PanelText.utc(deletedAt))")
        }
        let user = try await findChangeable(supportId, environment: environment)
        let at = now()
        @Sendable func view(_ result: UserDeletionResult) -> DeletionView {
            DeletionView(
                supportId: user.supportId.rawValue, closedBalance: result.closed.balance,
                closedDeficit: result.closed.deficit, users: result.users, cancelledGrants: result.cancelledGrants)
        }
        let result: UserDeletionResult
        do {
            // Audited in the deletion's own transaction, on every engine.
            result = try await store.deleteUser(
                UserDeletion(user: user.id, environment: environment, actor: actor, at: at)
            ) { result in
                [
                    AuditEvent(
                        environment: environment, actor: actor, action: "customer.delete",
                        subject: user.supportId.rawValue, after: try Self.json(view(result)), at: at)
                ]
            }
        } catch StoreError.alreadyExists {
            throw AdminError.invalid("\(user.supportId) was deleted already")
        } catch StoreError.notFound {
            // Merged into another customer since it was read: delete that one.
            throw AdminError.notFound("\(user.supportId) as it was")
        }
        await onChange?(user.id, .deleted)
        return view(result)
    }

    /// Deletes every grant of Sandbox (test data). Refused in Production.
    public func deleteAllGrants(environment: AppStoreEnvironment, actor: String) async throws -> Int {
        guard environment == .sandbox else {
            throw AdminError.forbidden("grants can be deleted in Sandbox only")
        }
        let before = try await store.grants(environment: environment, recipient: nil, status: nil, limit: 1_000_000)
        let deleted = try await store.deleteGrants(environment: environment)
        try await audit(
            environment, actor: actor, action: "grants.delete-all", subject: "grants",
            before: [
                "pending": before.count { $0.status == .pending }, "claimed": before.count { $0.status == .claimed },
            ],
            after: ["deleted": deleted])
        return deleted
    }

    /// Records an admin action that happened outside this service (a key made, a password reset).
    public func audit(
        _ environment: AppStoreEnvironment, actor: String, action: String, subject: String,
        before: (some Encodable & Sendable)? = String?.none, after: (some Encodable & Sendable)? = String?.none
    ) async throws {
        try await store.recordAudit(
            AuditEvent(
                environment: environment, actor: actor, action: action, subject: subject,
                before: try before.map(Self.json), after: try after.map(Self.json), at: now()))
    }

    // MARK: Helpers

    /// Audit actions the timeline shows as their own items already.
    private static let shownElsewhere: Set<String> = ["grant.create", "grant.cancel", "balance.set"]

    /// A user support may change: not one merged into another (its balance and grants live there now).
    func findChangeable(_ supportId: String, environment: AppStoreEnvironment) async throws -> User {
        let user = try await find(supportId, environment: environment)
        if let deletedAt = user.deletedAt {
            throw AdminError.invalid(
                "\(user.supportId) was deleted at the customer's request on \(PanelText.utc(deletedAt)): nothing more "
                    + "can be given to it")
        }
        if let into = user.mergedInto {
            let target = try await store.user(id: into)?.supportId.rawValue ?? "another customer"
            throw AdminError.invalid("\(user.supportId) was merged into \(target): act on \(target)")
        }
        return user
    }

    func find(_ supportId: String, environment: AppStoreEnvironment) async throws -> User {
        let text = supportId.trimmingCharacters(in: .whitespaces).lowercased()
        guard let id = SupportID(text.hasPrefix("_") ? text : "_" + text) else {
            throw AdminError.invalid("\(supportId) is not a Support ID (an underscore and 12 hex digits)")
        }
        guard let user = try await store.user(supportId: id, environment: environment) else {
            throw AdminError.notFound("user \(id) in \(environment.rawValue)")
        }
        return user
    }

    private func summaries(_ users: some Sequence<User>) async throws -> [UserSummary] {
        var result: [UserSummary] = []
        for user in users { result.append(try await summary(user)) }
        return result
    }

    private func summary(_ user: User) async throws -> UserSummary {
        let wallet = try await store.wallet(owner: user.id, environment: user.environment)
        let backup = try await store.backup(owner: user.id, environment: user.environment)
        return UserSummary(
            supportId: user.supportId.rawValue, createdAt: user.createdAt, balance: wallet.balance,
            deficit: wallet.deficit, backup: backup.map(BackupView.init), deletedAt: user.deletedAt)
    }

    private func owners(ofTransactions ids: [String], environment: AppStoreEnvironment) async throws -> [User] {
        var owners: [UUID] = []
        for id in ids {
            var receipts = try await store.receipts(originalTransactionId: id, environment: environment)
            if let receipt = try await store.receipt(transactionId: id, environment: environment) {
                receipts.append(receipt)
            }
            for receipt in receipts where !owners.contains(receipt.owner) { owners.append(receipt.owner) }
        }
        var users: [User] = []
        for owner in owners {
            if let user = try await store.user(id: owner), user.environment == environment { users.append(user) }
        }
        return users
    }

    private static func isSupportIdPrefix(_ text: String) -> Bool {
        let digits = text.hasPrefix("_") ? text.dropFirst() : Substring(text)
        return digits.count <= 12 && digits.allSatisfy(\.isHexDigit)
    }

    static func reason(_ text: String) throws(AdminError) -> String {
        try rule { () throws(SupportRuleError) in try SupportRules.reason(text) }
    }

    /// Runs a check of ``SupportRules``, its refusal as ``AdminError/invalid(_:)``.
    static func rule<T>(_ check: () throws(SupportRuleError) -> T) throws(AdminError) -> T {
        do {
            return try check()
        } catch {
            throw .invalid(error.description)
        }
    }

    /// Runs a store call that checks the balance support saw, its refusal as ``AdminError/changed(_:)``.
    static func refusingChanged<T>(_ call: () async throws -> T) async throws -> T {
        do {
            return try await call()
        } catch let changed as BalanceChanged {
            throw AdminError.changed(changed.description)
        }
    }

    static func json(_ value: some Encodable) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        encoder.dateEncodingStrategy = .iso8601
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }
}
