import CofferCore
import CofferStore
import Foundation

/// What support sees of a backup.
public struct BackupView: Sendable, Hashable, Codable {
    /// The balance backed up.
    public var value: Int64
    /// When it was written.
    public var lastUpdated: Date
    /// Its version.
    public var version: Int64
    /// `device` or `admin`.
    public var writer: String
    /// The device or admin that wrote it.
    public var writerName: String

    /// The view of a backup record.
    public init(_ record: BackupRecord) {
        value = record.value
        lastUpdated = record.lastUpdated
        version = record.version
        switch record.writer {
        case .device(let name): (writer, writerName) = ("device", name)
        case .admin(let name): (writer, writerName) = ("admin", name)
        }
    }
}

/// One user in a list.
public struct UserSummary: Sendable, Hashable, Codable {
    /// The Support ID.
    public var supportId: String
    /// When the user was created.
    public var createdAt: Date
    /// The server's balance.
    public var balance: Int64
    /// Credits owed after refunds.
    public var deficit: Int64
    /// The device's backup, if any.
    public var backup: BackupView?
    /// When the customer was deleted at their request, if they were.
    public var deletedAt: Date?

    /// Creates a summary.
    public init(
        supportId: String, createdAt: Date, balance: Int64, deficit: Int64, backup: BackupView?, deletedAt: Date? = nil
    ) {
        self.deletedAt = deletedAt
        self.supportId = supportId
        self.createdAt = createdAt
        self.balance = balance
        self.deficit = deficit
        self.backup = backup
    }
}

/// A page of users found by a search.
public struct UserSearchResult: Sendable, Hashable, Codable {
    /// The users, newest first.
    public var users: [UserSummary]
    /// How the query matched: `all`, `support-id`, `transaction-id`, `order-id`, `cloudkit-record-name` (a
    /// customer `coffer import cloudkit` brought in, by their old Support ID) or `nothing`.
    public var matchedBy: String
    /// The page, from 1.
    public var page: Int
    /// Whether another page follows.
    public var hasMore: Bool

    /// Creates a result.
    public init(users: [UserSummary], matchedBy: String, page: Int, hasMore: Bool) {
        self.users = users
        self.matchedBy = matchedBy
        self.page = page
        self.hasMore = hasMore
    }
}

/// A grant as support sees it, with its recipient's Support ID.
public struct GrantView: Sendable, Hashable, Codable {
    /// The grant's id.
    public var id: UUID
    /// The recipient's Support ID.
    public var supportId: String
    /// The credits.
    public var credits: Int64
    /// Why.
    public var reason: String
    /// Who created it.
    public var createdBy: String
    /// When.
    public var createdAt: Date
    /// When the app picked it up.
    public var claimedAt: Date?
    /// When support cancelled it.
    public var cancelledAt: Date?
    /// Who cancelled it.
    public var cancelledBy: String?
    /// `pending`, `claimed` or `cancelled`.
    public var status: GrantStatus

    /// The view of a grant.
    public init(_ grant: Grant, supportId: String) {
        id = grant.id
        self.supportId = supportId
        credits = grant.credits
        reason = grant.reason
        createdBy = grant.createdBy
        createdAt = grant.createdAt
        claimedAt = grant.claimedAt
        cancelledAt = grant.cancelledAt
        cancelledBy = grant.cancelledBy
        status = grant.status
    }
}

/// What happened in a user's timeline.
public enum TimelineKind: String, Sendable, Hashable, Codable, CaseIterable {
    /// A purchase delivered.
    case purchase
    /// A refund or revocation taken back.
    case refund
    /// A refund Apple reversed.
    case reversal
    /// Support created a grant.
    case grantCreated = "grant-created"
    /// Support cancelled a grant before the app claimed it.
    case grantCancelled = "grant-cancelled"
    /// The app claimed a grant.
    case grantClaimed = "grant-claimed"
    /// An admin changed the balance in the ledger.
    case adjustment
    /// The app spent credits (server wallet).
    case spend
    /// A device or admin wrote the backup.
    case backup
    /// Support merged customers.
    case merge
    /// Any other admin action about this user.
    case admin
}

/// One line of a user's timeline.
public struct TimelineItem: Sendable, Hashable, Codable {
    /// When.
    public var at: Date
    /// What kind of event.
    public var kind: TimelineKind
    /// One readable sentence.
    public var summary: String
    /// The change to the balance, when there was one.
    public var credits: Int64?
    /// The balance after, for ledger entries and backups.
    public var balanceAfter: Int64?
    /// A transaction id, grant id or ledger key.
    public var reference: String?
    /// The environment Apple's data came from, for purchases, refunds and reversals whose source said: on a
    /// Production server, Sandbox marks App Review's and TestFlight's purchases; Xcode marks Xcode's StoreKit testing.
    public var dataEnvironment: DataEnvironment?

    /// Creates an item.
    public init(
        at: Date, kind: TimelineKind, summary: String, credits: Int64? = nil, balanceAfter: Int64? = nil,
        reference: String? = nil, dataEnvironment: DataEnvironment? = nil
    ) {
        self.at = at
        self.kind = kind
        self.summary = summary
        self.credits = credits
        self.balanceAfter = balanceAfter
        self.reference = reference
        self.dataEnvironment = dataEnvironment
    }
}

/// One purchase as support sees it: the product by name, what the customer paid, where it stands, and Apple's
/// reason for a refund.
public struct PurchaseView: Sendable, Hashable, Codable {
    /// Apple's transaction id.
    public var transactionId: String
    /// The product's id.
    public var productId: String
    /// The product's display name from the catalog, or its id.
    public var product: String
    /// When Apple says it was bought.
    public var purchaseDate: Date
    /// Units bought.
    public var quantity: Int
    /// What Apple's data says the customer paid, in milliunits of ``currency``, where it said.
    public var price: Int64?
    /// The price's currency.
    public var currency: String?
    /// The App Store storefront (country) it was bought in.
    public var storefront: String?
    /// The environment Apple's data came from, where it said (Xcode for Xcode's StoreKit testing).
    public var dataEnvironment: DataEnvironment?
    /// Whether it came through Family Sharing.
    public var familyShared: Bool
    /// Where it stands: pending, delivered, revoked (refunded) or restored (refund reversed).
    public var status: ReceiptStatus
    /// Credits it delivered.
    public var credits: Int64?
    /// When Apple refunded it, while the refund stands.
    public var refundedAt: Date?
    /// Apple's `revocationReason` (0 another reason, 1 an issue in the app), where Apple's data gave it.
    public var refundReason: Int?

    /// A receipt as support sees it, named from the catalog.
    public init(_ receipt: Receipt, catalog: Catalog) {
        let fact = receipt.transaction
        transactionId = fact.transactionId
        productId = fact.productId
        product = catalog.product(id: fact.productId)?.name ?? fact.productId
        purchaseDate = fact.purchaseDate
        quantity = fact.quantity
        price = fact.price
        currency = fact.currency
        storefront = fact.storefront
        dataEnvironment = fact.dataEnvironment
        familyShared = fact.isFamilyShared
        status = receipt.status
        credits = receipt.deliveredCredits
        refundedAt = receipt.isRevoked ? receipt.revokedAt : nil
        refundReason = receipt.isRevoked ? fact.revocationReason : nil
    }

    /// The price in words (`4.99 USD`), or `nil` where Apple's data gave none.
    public var priceText: String? {
        guard let price, let currency else { return nil }
        return PanelText.money(price, currency: currency)
    }

    /// Apple's refund reason in words, while refunded.
    public var refundReasonText: String? {
        status == .revoked ? Payment.revocationReasonText(refundReason) ?? "Apple gave no reason" : nil
    }
}

/// The last Verify Purchases the customer's app ran, as it reported it.
public struct VerifyReportView: Sendable, Hashable, Codable {
    /// When the server received it.
    public var reportedAt: Date
    /// What the app found, one item per transaction.
    public var items: [ReconciliationItem]

    /// Creates the view.
    public init(reportedAt: Date, items: [ReconciliationItem]) {
        self.reportedAt = reportedAt
        self.items = items
    }

    /// A verdict in words, for support.
    public static func words(_ verdict: ReconciliationVerdict) -> String {
        switch verdict {
        case .deliverNow: "delivered now (it had never been fulfilled)"
        case .alreadyRecorded: "already recorded"
        case .finishOnly: "finished (it had been delivered before)"
        case .couldNotBeVerified: "could not be verified: the customer was told to contact support"
        }
    }

    /// The report in one sentence: how many transactions, and how many of each verdict.
    public var summary: String {
        let order: [ReconciliationVerdict] = [.couldNotBeVerified, .deliverNow, .finishOnly, .alreadyRecorded]
        let parts = order.compactMap { verdict -> String? in
            let count = items.count { $0.verdict == verdict }
            return count == 0 ? nil : "\(PanelText.count(count)) \(Self.words(verdict).split(separator: ":")[0])"
        }
        let transactions = items.count == 1 ? "1 transaction" : "\(PanelText.count(items.count)) transactions"
        return parts.isEmpty ? "no transactions" : "\(transactions): " + parts.joined(separator: ", ")
    }
}

/// Everything support sees about one user.
public struct UserDetail: Sendable, Hashable, Codable {
    /// The user's figures.
    public var user: UserSummary
    /// The environment.
    public var environment: AppStoreEnvironment
    /// Who owns the running balance: `device` or `server`.
    public var walletMode: WalletMode

    /// The balance support edits and compares against: the server wallet's balance, or the device wallet's
    /// backed-up balance (0 before the first backup).
    public var editableBalance: Int64 {
        switch walletMode {
        case .server: user.balance
        case .device: user.backup?.value ?? 0
        }
    }
    /// The entitlements the user has now.
    public var entitlements: [String]
    /// The user's grants, newest first.
    public var grants: [GrantView]
    /// Purchases, refunds, grants, backups and admin edits, newest first.
    public var timeline: [TimelineItem]
    /// The Apple account the customer is, for a user registered with an AppTransaction; `nil` for an anonymous
    /// install.
    public var appleAccount: AppleAccount?
    /// The Support ID of the customer this anonymous user was merged into.
    public var mergedInto: String?
    /// The customer's subscription groups, their state and dates.
    public var subscriptions: [SubscriptionView]
    /// The purchases, newest first.
    public var purchases: [PurchaseView] = []
    /// The last Verify Purchases the customer's app reported.
    public var verifyReport: VerifyReportView?
    /// Whether the customer's data is Apple's Sandbox (App Review, TestFlight, a sandbox tester): their
    /// AppTransaction says Sandbox, or a purchase of theirs is Sandbox data.
    public var sandboxMarked = false

    /// Creates a detail view.
    public init(
        user: UserSummary, environment: AppStoreEnvironment, walletMode: WalletMode, entitlements: [String],
        grants: [GrantView],
        timeline: [TimelineItem], appleAccount: AppleAccount? = nil, sandboxMarked: Bool = false,
        mergedInto: String? = nil, subscriptions: [SubscriptionView] = [], purchases: [PurchaseView] = [],
        verifyReport: VerifyReportView? = nil
    ) {
        self.sandboxMarked = sandboxMarked
        self.verifyReport = verifyReport
        self.subscriptions = subscriptions
        self.purchases = purchases
        self.user = user
        self.environment = environment
        self.walletMode = walletMode
        self.entitlements = entitlements
        self.grants = grants
        self.timeline = timeline
        self.appleAccount = appleAccount
        self.mergedInto = mergedInto
    }
}

/// What setting a balance did.
public struct BalanceChange: Sendable, Hashable, Codable {
    /// The user.
    public var supportId: String
    /// The balance before (the backup's value in device-wallet mode).
    public var before: Int64
    /// The balance after.
    public var after: Int64
    /// `ledger` (server wallet: an adjustment entry) or `backup` (device wallet: an admin backup the app accepts).
    public var via: String

    /// Creates a result.
    public init(supportId: String, before: Int64, after: Int64, via: String) {
        self.supportId = supportId
        self.before = before
        self.after = after
        self.via = via
    }
}

/// Why an admin action was refused.
public enum AdminError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Nothing with this name exists.
    case notFound(String)
    /// The input is not acceptable.
    case invalid(String)
    /// The action is not allowed here (deleting Production's grants, say).
    case forbidden(String)
    /// Something the action needs (Apple's API) did not answer; try again later.
    case unavailable(String)
    /// The record changed since support saw it (a balance edit's balance); nothing was changed.
    case changed(String)

    /// The reason, for people.
    public var description: String {
        switch self {
        case .notFound(let what): "\(what) not found"
        case .invalid(let why): why
        case .forbidden(let why): why
        case .unavailable(let why): why
        case .changed(let why): why
        }
    }
}

extension UserDetail {
    /// Decodes a detail; what an older server does not send (subscriptions, purchases, the Verify Purchases
    /// report) is empty.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            user: try container.decode(UserSummary.self, forKey: .user),
            environment: try container.decode(AppStoreEnvironment.self, forKey: .environment),
            walletMode: try container.decode(WalletMode.self, forKey: .walletMode),
            entitlements: try container.decode([String].self, forKey: .entitlements),
            grants: try container.decode([GrantView].self, forKey: .grants),
            timeline: try container.decode([TimelineItem].self, forKey: .timeline),
            appleAccount: try container.decodeIfPresent(AppleAccount.self, forKey: .appleAccount),
            sandboxMarked: try container.decodeIfPresent(Bool.self, forKey: .sandboxMarked) ?? false,
            mergedInto: try container.decodeIfPresent(String.self, forKey: .mergedInto),
            subscriptions: try container.decodeIfPresent([SubscriptionView].self, forKey: .subscriptions) ?? [],
            purchases: try container.decodeIfPresent([PurchaseView].self, forKey: .purchases) ?? [],
            verifyReport: try container.decodeIfPresent(VerifyReportView.self, forKey: .verifyReport))
    }
}

/// What deleting a customer at their request did.
public struct DeletionView: Sendable, Hashable, Codable {
    /// The customer's Support ID (kept, anonymised, so a ticket can still name it).
    public var supportId: String
    /// The balance the closing ledger entry took to zero.
    public var closedBalance: Int64
    /// The deficit it took to zero.
    public var closedDeficit: Int64
    /// User records anonymised: the customer and the installs merged into them.
    public var users: Int
    /// Pending grants cancelled.
    public var cancelledGrants: Int

    /// Creates the view.
    public init(supportId: String, closedBalance: Int64, closedDeficit: Int64, users: Int, cancelledGrants: Int) {
        self.supportId = supportId
        self.closedBalance = closedBalance
        self.closedDeficit = closedDeficit
        self.users = users
        self.cancelledGrants = cancelledGrants
    }
}

/// What a merge moved.
public struct MergeResponse: Sendable, Hashable, Codable {
    /// The merged user's Support ID.
    public var from: String
    /// The account user's Support ID.
    public var into: String
    /// Credits added to the account user (server wallet: the merged user's balance; device wallet: the balance
    /// its install last backed up, which the account's app picks up from its mailbox).
    public var movedBalance: Int64
    /// Deficit added to the account user.
    public var movedDeficit: Int64
    /// The account user's balance on the server after.
    public var balance: Int64
    /// The account user's deficit after.
    public var deficit: Int64
    /// Receipts that moved.
    public var receipts: Int
    /// Grants that moved.
    public var grants: Int
    /// Device tokens of the merged customer's installs that registered themselves, moved with the account owner's
    /// merge code: they sign in as the account customer from now on.
    public var tokensMoved: Int
    /// Device tokens a CloudKit claim issued to the merged customer: ended by the merge (those devices register
    /// again with their AppTransaction).
    public var claimTokensEnded: Int
    /// Device tokens of the merged customer's installs that registered themselves, ended because no merge code of
    /// the account's owner was given (those installs register again).
    public var tokensEnded: Int

    /// Creates the answer.
    public init(
        from: String, into: String, movedBalance: Int64, movedDeficit: Int64, balance: Int64, deficit: Int64,
        receipts: Int, grants: Int, tokensMoved: Int = 0, claimTokensEnded: Int = 0, tokensEnded: Int = 0
    ) {
        self.from = from
        self.into = into
        self.movedBalance = movedBalance
        self.movedDeficit = movedDeficit
        self.balance = balance
        self.deficit = deficit
        self.receipts = receipts
        self.grants = grants
        self.tokensMoved = tokensMoved
        self.claimTokensEnded = claimTokensEnded
        self.tokensEnded = tokensEnded
    }

    private enum CodingKeys: String, CodingKey {
        case from, into, movedBalance, movedDeficit, balance, deficit, receipts, grants, tokensMoved, claimTokensEnded
        case tokensEnded
    }

    /// Reads an answer; one from a server before token counts reads them as 0.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            from: try container.decode(String.self, forKey: .from),
            into: try container.decode(String.self, forKey: .into),
            movedBalance: try container.decode(Int64.self, forKey: .movedBalance),
            movedDeficit: try container.decode(Int64.self, forKey: .movedDeficit),
            balance: try container.decode(Int64.self, forKey: .balance),
            deficit: try container.decode(Int64.self, forKey: .deficit),
            receipts: try container.decode(Int.self, forKey: .receipts),
            grants: try container.decode(Int.self, forKey: .grants),
            tokensMoved: try container.decodeIfPresent(Int.self, forKey: .tokensMoved) ?? 0,
            claimTokensEnded: try container.decodeIfPresent(Int.self, forKey: .claimTokensEnded) ?? 0,
            tokensEnded: try container.decodeIfPresent(Int.self, forKey: .tokensEnded) ?? 0)
    }
}

/// Whether Apple's side is healthy, for the dashboard: what arrived, and what the recovery service found.
public struct AppleHealth: Sendable, Hashable {
    /// How many notifications of one type.
    public struct TypeCount: Sendable, Hashable {
        /// Apple's `notificationType`.
        public var type: String
        /// How many.
        public var count: Int

        /// Creates a count.
        public init(type: String, count: Int) {
            self.type = type
            self.count = count
        }
    }

    /// The newest notification received, if any.
    public var lastNotification: NotificationRecord?
    /// Notifications received over the last 7 days, by type, most first.
    public var lastWeek: [TypeCount]
    /// The recovery service's last run, if it ever ran.
    public var recovery: RecoveryRun?

    /// Creates the figures.
    public init(lastNotification: NotificationRecord?, lastWeek: [TypeCount], recovery: RecoveryRun?) {
        self.lastNotification = lastNotification
        self.lastWeek = lastWeek
        self.recovery = recovery
    }
}
