import CofferCore
import Foundation

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
    public var editableBalance: Int64 { editableBalance(of: nil) }

    /// What support's balance edit of a currency by id (`nil`: the default) starts from: the ledger's balance of it in
    /// the server wallet, the backup's in the device wallet (the app's own, which the edit overwrites).
    public func editableBalance(of currency: String?) -> Int64 {
        switch (walletMode, currency) {
        case (.server, nil): user.balance
        case (.server, let id?): balances[id] ?? 0
        case (.device, nil): user.backup?.value ?? 0
        case (.device, let id?): user.backup?.currencies?[id] ?? 0
        }
    }
    /// The ledger's balance of every currency the catalog lists (the default's is ``UserSummary/balance``) and of
    /// any other the customer holds, by currency id.
    public var balances: [String: Int64] = [:]
    /// The deficit of every currency, as ``balances``.
    public var deficits: [String: Int64] = [:]
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
    public var subscriptions: [SubscriptionSummary]
    /// The purchases, newest first.
    public var purchases: [PurchaseView] = []
    /// The last Verify Purchases the customer's app reported.
    public var verifyReport: VerifyReportView?
    /// Whether the customer's data is Apple's Sandbox (App Review, TestFlight, a sandbox tester): their
    /// AppTransaction says Sandbox, or a purchase of theirs is Sandbox data.
    public var sandboxMarked = false
    /// Apple's refund requests about the customer's purchases and what was answered, latest first.
    public var refundRequests: [RefundRequestView] = []
    /// Entitlements support granted for a time, newest first.
    public var entitlementGrants: [EntitlementGrantView] = []
    /// What the latest reconciliation with Apple's history found for the customer, by transaction.
    public var discrepancies: [DiscrepancyView] = []
    /// The customer's answer to sharing consumption data with Apple, `nil` until they answered.
    public var consent: ConsentResponse?
    /// The Apple account's app transaction as Apple answers Get App Transaction Info now; `nil` for an anonymous
    /// install, without an App Store Server API key, or when Apple did not answer.
    public var appTransaction: AppTransactionView?

    /// Creates a detail view.
    public init(
        user: UserSummary, environment: AppStoreEnvironment, walletMode: WalletMode, entitlements: [String],
        grants: [GrantView],
        timeline: [TimelineItem], appleAccount: AppleAccount? = nil, sandboxMarked: Bool = false,
        mergedInto: String? = nil, subscriptions: [SubscriptionSummary] = [], purchases: [PurchaseView] = [],
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

    /// Decodes a detail; what an older server does not send (subscriptions, purchases, the Verify Purchases
    /// report, refund requests, the consent) is empty.
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
            subscriptions: try container.decodeIfPresent([SubscriptionSummary].self, forKey: .subscriptions) ?? [],
            purchases: try container.decodeIfPresent([PurchaseView].self, forKey: .purchases) ?? [],
            verifyReport: try container.decodeIfPresent(VerifyReportView.self, forKey: .verifyReport))
        refundRequests = try container.decodeIfPresent([RefundRequestView].self, forKey: .refundRequests) ?? []
        consent = try container.decodeIfPresent(ConsentResponse.self, forKey: .consent)
        appTransaction = try container.decodeIfPresent(AppTransactionView.self, forKey: .appTransaction)
        entitlementGrants =
            try container.decodeIfPresent([EntitlementGrantView].self, forKey: .entitlementGrants) ?? []
        discrepancies = try container.decodeIfPresent([DiscrepancyView].self, forKey: .discrepancies) ?? []
    }
}
