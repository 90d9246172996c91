import Foundation

/// `POST /v1/users` answers 201 with this. The token is shown once; the server keeps only its hash.
public struct CreateUserResponse: Codable, Sendable, Equatable {
    /// The user's support id, `_` and 12 lowercase hex characters, shown in the app.
    public var supportId: String
    /// The bearer token for every later request. Keep it in the Keychain.
    public var token: String
    /// The token to pass to StoreKit as `appAccountToken`, so Apple's transactions name this user.
    public var appAccountToken: UUID

    /// Creates the answer.
    public init(supportId: String, token: String, appAccountToken: UUID) {
        self.supportId = supportId
        self.token = token
        self.appAccountToken = appAccountToken
    }
}

/// The body of `POST /v1/transactions`.
public struct TransactionRequest: Codable, Sendable, Equatable {
    /// A StoreKit 2 signed transaction (`jwsRepresentation`).
    public var signedTransaction: String

    /// Creates the body.
    public init(signedTransaction: String) { self.signedTransaction = signedTransaction }
}

/// What posting a transaction did.
public enum TransactionOutcome: String, Codable, Sendable {
    /// Delivered now: credits added, entitlements updated.
    case delivered
    /// Delivered before; nothing changed. Finish the StoreKit transaction.
    case duplicate
    /// Apple refunded or revoked it: nothing is delivered (and anything delivered was taken back).
    case revoked
}

/// `POST /v1/transactions` answers 200 with this.
public struct TransactionResponse: Codable, Sendable, Equatable {
    /// What happened.
    public var outcome: TransactionOutcome
    /// The transaction.
    public var transactionId: String
    /// Credits this transaction delivers (0 for duplicates of it, family-shared and non-consumables).
    public var credits: Int64
    /// The user's balance now.
    public var balance: Int64
    /// The user's entitlements now.
    public var entitlements: [String]

    /// Creates the answer.
    public init(
        outcome: TransactionOutcome, transactionId: String, credits: Int64, balance: Int64, entitlements: [String]
    ) {
        self.outcome = outcome
        self.transactionId = transactionId
        self.credits = credits
        self.balance = balance
        self.entitlements = entitlements
    }
}

/// The device's backup as the server holds it.
public struct BackupBody: Codable, Sendable, Equatable {
    /// The backed-up balance.
    public var value: Int64
    /// When it was last written.
    public var lastUpdated: Date
    /// The version to send in `If-Match` when writing.
    public var version: Int64
    /// Who wrote it: `device` or `admin`.
    public var writer: String

    /// Creates the body.
    public init(value: Int64, lastUpdated: Date, version: Int64, writer: String) {
        self.value = value
        self.lastUpdated = lastUpdated
        self.version = version
        self.writer = writer
    }
}

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

    /// Creates the answer.
    public init(supportId: String, balance: Int64, deficit: Int64, entitlements: [String], backup: BackupBody?) {
        self.supportId = supportId
        self.balance = balance
        self.deficit = deficit
        self.entitlements = entitlements
        self.backup = backup
    }

    /// Encodes `backup` as `null` when there is none, as the contract says.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(supportId, forKey: .supportId)
        try container.encode(balance, forKey: .balance)
        try container.encode(deficit, forKey: .deficit)
        try container.encode(entitlements, forKey: .entitlements)
        try container.encode(backup, forKey: .backup)
    }
}

/// Every error of the API: `{"error": {"code", "message"}}`.
public struct ErrorResponse: Codable, Sendable, Equatable, Error {
    /// The error.
    public struct Body: Codable, Sendable, Equatable {
        /// A stable code, e.g. `unauthorized`, `wrong-user`, or Apple's status name for refused signed data.
        public var code: String
        /// What went wrong, for people.
        public var message: String

        /// Creates the error body.
        public init(code: String, message: String) {
            self.code = code
            self.message = message
        }
    }

    /// The error.
    public var error: Body

    /// Creates an error.
    public init(code: String, message: String) { error = Body(code: code, message: message) }
}

/// The body of `PUT /v1/me/backup`. Send the version you read in `If-Match` (none for a first write).
public struct BackupRequest: Codable, Sendable, Equatable {
    /// The balance to back up.
    public var value: Int64
    /// A name for the device writing it.
    public var device: String?

    /// Creates the body.
    public init(value: Int64, device: String? = nil) {
        self.value = value
        self.device = device
    }
}

/// A support grant as the app sees it.
public struct GrantBody: Codable, Sendable, Equatable {
    /// The grant's id; claim it with `POST /v1/me/grants/{id}/claim`.
    public var id: UUID
    /// The credits granted.
    public var credits: Int64
    /// Why.
    public var reason: String
    /// When support created it.
    public var createdAt: Date
    /// When the app claimed it, `nil` while pending.
    public var claimedAt: Date?

    /// Creates the body.
    public init(id: UUID, credits: Int64, reason: String, createdAt: Date, claimedAt: Date?) {
        self.id = id
        self.credits = credits
        self.reason = reason
        self.createdAt = createdAt
        self.claimedAt = claimedAt
    }
}

/// `GET /v1/me/grants` answers with this.
public struct GrantsResponse: Codable, Sendable, Equatable {
    /// The grants, newest first.
    public var grants: [GrantBody]

    /// Creates the answer.
    public init(grants: [GrantBody]) { self.grants = grants }
}

/// `POST /v1/me/grants/{id}/claim` answers with this.
public struct ClaimResponse: Codable, Sendable, Equatable {
    /// The claimed grant.
    public var grant: GrantBody
    /// The balance after it (server wallet); in the device wallet the app adds the credits itself.
    public var balance: Int64

    /// Creates the answer.
    public init(grant: GrantBody, balance: Int64) {
        self.grant = grant
        self.balance = balance
    }
}

/// The body of `POST /v1/me/spend` (with an `Idempotency-Key` header).
public struct SpendRequest: Codable, Sendable, Equatable {
    /// Credits to spend.
    public var amount: Int64

    /// Creates the body.
    public init(amount: Int64) { self.amount = amount }
}

/// `POST /v1/me/spend` answers with this.
public struct BalanceResponse: Codable, Sendable, Equatable {
    /// The balance now.
    public var balance: Int64

    /// Creates the answer.
    public init(balance: Int64) { self.balance = balance }
}
