/// `GET /v1/me` answers with this.
public struct MeResponse: Codable, Sendable, Equatable {
    /// The user's support id.
    public var supportId: String
    /// The balance.
    public var balance: Int64
    /// What refunds could not take back.
    public var deficit: Int64
    /// The entitlements now.
    public var entitlements: [String]
    /// The backup, if the device made one.
    public var backup: BackupBody?
    /// Who keeps the balance: `server` or `device` (the server's `wallet` setting); `nil` from a server before it
    /// said. The SDK configured for the other wallet stops at launch (its `walletMismatch` error).
    public var wallet: String?
    /// The customer's answer to sharing consumption data with Apple for refund requests (`PUT /v1/me/consent`),
    /// `nil` until they answered: the app asks once.
    public var consent: ConsentResponse?
    /// The entitlements support granted for a time that unlock now, with their ends (in `entitlements` too); `nil`
    /// from a server before them. The SDK keeps them until they end.
    public var grantedEntitlements: [GrantedEntitlement]?
    /// The balance of each currency the catalog lists, by id (`{"coins": 120}`; `balance` is the default currency's);
    /// `nil` from a server before currencies.
    public var balances: [String: Int64]?
    /// What refunds could not take back, of each currency, by id; `nil` from a server before currencies.
    public var deficits: [String: Int64]?
    /// Credits that expire, what is left of each lot, soonest to end first (in `balances` too; spends take these
    /// first); `nil` from a server before them.
    public var expiring: [ExpiringCredits]?

    /// Creates the answer.
    public init(
        supportId: String, balance: Int64, deficit: Int64, entitlements: [String], backup: BackupBody?,
        wallet: String? = nil, consent: ConsentResponse? = nil, grantedEntitlements: [GrantedEntitlement]? = nil,
        balances: [String: Int64]? = nil, deficits: [String: Int64]? = nil
    ) {
        self.supportId = supportId
        self.balance = balance
        self.deficit = deficit
        self.entitlements = entitlements
        self.backup = backup
        self.wallet = wallet
        self.consent = consent
        self.grantedEntitlements = grantedEntitlements
        self.balances = balances
        self.deficits = deficits
    }

    /// Encodes `backup` as `null` when there is none, as the contract says.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(supportId, forKey: .supportId)
        try container.encode(balance, forKey: .balance)
        try container.encode(deficit, forKey: .deficit)
        try container.encode(entitlements, forKey: .entitlements)
        try container.encode(backup, forKey: .backup)
        try container.encodeIfPresent(wallet, forKey: .wallet)
        try container.encodeIfPresent(consent, forKey: .consent)
        try container.encodeIfPresent(grantedEntitlements, forKey: .grantedEntitlements)
        try container.encodeIfPresent(balances, forKey: .balances)
        try container.encodeIfPresent(deficits, forKey: .deficits)
        try container.encodeIfPresent(expiring, forKey: .expiring)
    }
}

/// Credits that expire, as `GET /v1/me` lists them.
public struct ExpiringCredits: Codable, Sendable, Hashable {
    /// The currency, by its catalog id.
    public var currency: String
    /// What is left of them.
    public var amount: Int64
    /// When what is left ends (ISO 8601).
    public var expiresAt: String

    /// Creates the item.
    public init(currency: String, amount: Int64, expiresAt: String) {
        self.currency = currency
        self.amount = amount
        self.expiresAt = expiresAt
    }
}
