import Foundation

/// The body of `POST /v1/users`: empty (or `{}`) for an anonymous user, or the app's signed AppTransaction to
/// register this device to the customer its Apple account is.
public struct CreateUserRequest: Codable, Sendable, Equatable {
    /// StoreKit's `AppTransaction.shared` as signed data (`jwsRepresentation`).
    public var signedAppTransaction: String?

    /// Creates the body.
    public init(signedAppTransaction: String? = nil) { self.signedAppTransaction = signedAppTransaction }
}

/// The body of `POST /v1/users/cloudkit`: an app claiming the customer `coffer import cloudkit` brought in from
/// the app's CloudKit records, by the CloudKit user record name the device reads (`CKContainer.userRecordID()`).
public struct CloudKitClaimRequest: Codable, Sendable, Equatable {
    /// The customer's CloudKit user record name, e.g. `_0123456789abcdef0123456789abcdef`.
    public var userRecordName: String
    /// A random secret the install chose and kept before asking (16 to 128 characters): the first claim's key
    /// keeps the customer, and the same key claims again after a lost answer.
    public var claimKey: String
    /// StoreKit's AppTransaction, signed, when the app registers by Apple account: the imported customer becomes
    /// that account's (unless the account has a customer already), so its other devices find them.
    public var signedAppTransaction: String?
    /// A CloudKit web auth token the app fetched for this claim (`CKFetchWebAuthTokenOperation` with the
    /// container's API token): the proof that the claim comes from the iCloud user it names. Single-use; required
    /// when the server's `cloudkit.claim.proof` is `web-auth-token`.
    public var ckWebAuthToken: String?

    /// Creates the body.
    public init(
        userRecordName: String, claimKey: String, signedAppTransaction: String? = nil, ckWebAuthToken: String? = nil
    ) {
        self.userRecordName = userRecordName
        self.claimKey = claimKey
        self.signedAppTransaction = signedAppTransaction
        self.ckWebAuthToken = ckWebAuthToken
    }
}

/// The answer of `POST /v1/me/merge-code`: a one-time code the install shows, which the customer reads to support
/// so support can merge this customer into their Apple account's.
public struct MergeCodeResponse: Codable, Sendable, Equatable {
    /// Eight characters shown as `K7QM-2XHP`.
    public var code: String
    /// When it stops working (15 minutes on).
    public var expiresAt: Date
    /// Whether the customer is an Apple account's: then the code lets support move another install of theirs into
    /// this account (it signs in as them from then on), and the app says so; otherwise it moves this install's
    /// purchases to their Apple account.
    public var appleAccount: Bool

    /// Creates the answer.
    public init(code: String, expiresAt: Date, appleAccount: Bool = false) {
        self.code = code
        self.expiresAt = expiresAt
        self.appleAccount = appleAccount
    }

    private enum CodingKeys: String, CodingKey { case code, expiresAt, appleAccount }

    /// Reads an answer; one from a server before `appleAccount` reads as an anonymous customer's.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            code: try container.decode(String.self, forKey: .code),
            expiresAt: try container.decode(Date.self, forKey: .expiresAt),
            appleAccount: try container.decodeIfPresent(Bool.self, forKey: .appleAccount) ?? false)
    }
}

/// The body of `PUT /v1/me/push-token` (and `DELETE /v1/me/push-token`): this device's APNs token, so the
/// server can wake the app with a background push when support grants or edits a balance, or a refund touches
/// the customer.
public struct PushTokenRequest: Codable, Sendable, Equatable {
    /// The device token `application(_:didRegisterForRemoteNotificationsWithDeviceToken:)` gave, as hex.
    public var token: String
    /// `sandbox` for an app built for development, `production` (the default) for App Store and TestFlight
    /// builds: the APNs the token belongs to.
    public var environment: String?

    /// Creates the body.
    public init(token: String, environment: String? = nil) {
        self.token = token
        self.environment = environment
    }
}

/// The body of `POST /v1/me/milestones`: a milestone the app reached for the customer, e.g. `loyalty:pro` (the
/// loyalty lifetime of the group `pro` earned).
public struct MilestoneRequest: Codable, Sendable, Equatable {
    /// The milestone: 1 to 64 characters of `a-z`, `0-9`, `.`, `_`, `-` and `:`.
    public var name: String

    /// Creates the body.
    public init(name: String) { self.name = name }
}

/// `POST /v1/me/milestones` answers with this: whether the customer reached the milestone for the first time
/// (on any of its devices), so the app celebrates it once.
public struct MilestoneResponse: Codable, Sendable, Equatable {
    /// The milestone.
    public var name: String
    /// Whether this is the first time it was recorded for the customer.
    public var first: Bool

    /// Creates the answer.
    public init(name: String, first: Bool) {
        self.name = name
        self.first = first
    }
}

/// The body of `PUT /v1/me/verify-report`: what the app's "Verify Purchases" found, for support's customer page.
/// It replaces the install's report before.
public struct VerifyReportRequest: Codable, Sendable, Equatable {
    /// One item per transaction, at most 500.
    public var items: [VerifyReportItem]

    /// Creates the body.
    public init(items: [VerifyReportItem]) { self.items = items }
}

/// One transaction of a Verify Purchases report.
public struct VerifyReportItem: Codable, Sendable, Equatable {
    /// Apple's transaction id: 1 to 64 printable ASCII characters.
    public var transactionId: String
    /// The product: 1 to 200 printable ASCII characters.
    public var productId: String
    /// Whether the app had finished the transaction.
    public var finished: Bool
    /// Whether StoreKit verified its signature.
    public var verified: Bool
    /// The verdict: `deliverNow`, `alreadyRecorded`, `finishOnly` or `couldNotBeVerified`.
    public var verdict: String

    /// Creates an item.
    public init(transactionId: String, productId: String, finished: Bool, verified: Bool, verdict: String) {
        self.transactionId = transactionId
        self.productId = productId
        self.finished = finished
        self.verified = verified
        self.verdict = verdict
    }
}

/// `PUT /v1/me/verify-report` answers with this.
public struct VerifyReportResponse: Codable, Sendable, Equatable {
    /// The items kept.
    public var items: Int

    /// Creates the answer.
    public init(items: Int) { self.items = items }
}

/// `POST /v1/users` answers with this: 201 for a new user, 200 for another device of an Apple account Coffer
/// knows (the same Support ID and appAccountToken, a token of the device's own). The token is shown once; the
/// server keeps only its hash.
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
    /// `true` for a purchase the app delivered before it used Coffer (StoreKit listed it finished at the SDK's first
    /// launch): recorded on the ledger without credits (``TransactionOutcome/recorded``); its entitlements count
    /// and a refund takes back the catalog's credits. Absent or `false`: delivered now.
    public var previouslyDelivered: Bool?

    /// Creates the body.
    public init(signedTransaction: String, previouslyDelivered: Bool? = nil) {
        self.signedTransaction = signedTransaction
        self.previouslyDelivered = previouslyDelivered
    }
}

/// What posting a transaction did.
public enum TransactionOutcome: String, Codable, Sendable {
    /// Delivered now: credits added, entitlements updated.
    case delivered
    /// Delivered before; nothing changed. Finish the StoreKit transaction.
    case duplicate
    /// Apple refunded or revoked it: nothing is delivered (and anything delivered was taken back).
    case revoked
    /// Delivered by the app before it used Coffer (`previouslyDelivered`): on the ledger now, without credits.
    case recorded
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
    /// The deficit backed up with the balance.
    public var deficit: Int64
    /// The device wallet's mailbox keys the balance already holds: a device restoring this backup takes them as
    /// applied. Absent when there are none.
    public var applied: [String]?

    /// Creates the body.
    public init(
        value: Int64, lastUpdated: Date, version: Int64, writer: String, deficit: Int64 = 0, applied: [String]? = nil
    ) {
        self.value = value
        self.lastUpdated = lastUpdated
        self.version = version
        self.writer = writer
        self.deficit = deficit
        self.applied = applied
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
    /// Who keeps the balance: `server` or `device` (the server's `wallet` setting); `nil` from a server before it
    /// said. The SDK configured for the other wallet stops at launch (its `walletMismatch` error).
    public var wallet: String?

    /// Creates the answer.
    public init(
        supportId: String, balance: Int64, deficit: Int64, entitlements: [String], backup: BackupBody?,
        wallet: String? = nil
    ) {
        self.supportId = supportId
        self.balance = balance
        self.deficit = deficit
        self.entitlements = entitlements
        self.backup = backup
        self.wallet = wallet
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
    /// The deficit to back up with it (what refunds could not take back); 0 when absent.
    public var deficit: Int64?
    /// The keys of the mailbox (`GET /v1/me/adjustments`) this balance already holds, at most 1,000; the server keeps
    /// those in the customer's mailbox. Absent: none.
    public var applied: [String]?

    /// Creates the body.
    public init(value: Int64, device: String? = nil, deficit: Int64? = nil, applied: [String]? = nil) {
        self.value = value
        self.device = device
        self.deficit = deficit
        self.applied = applied
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
    /// When support cancelled it (before any claim); a cancelled grant is never credited.
    public var cancelledAt: Date?

    /// Creates the body.
    public init(id: UUID, credits: Int64, reason: String, createdAt: Date, claimedAt: Date?, cancelledAt: Date? = nil) {
        self.id = id
        self.credits = credits
        self.reason = reason
        self.createdAt = createdAt
        self.claimedAt = claimedAt
        self.cancelledAt = cancelledAt
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

/// The body Apple posts to `POST /v1/apple/notifications` (App Store Server Notifications V2).
public struct NotificationRequest: Codable, Sendable, Equatable {
    /// The signed notification.
    public var signedPayload: String

    /// Creates the body.
    public init(signedPayload: String) { self.signedPayload = signedPayload }
}

/// `POST /v1/apple/notifications` answers with this (Apple reads only the status code).
public struct NotificationResponse: Codable, Sendable, Equatable {
    /// `applied`, `duplicate` (this `notificationUUID` was processed before), `unattributed` (kept until a
    /// user presents the transaction) or `logged` (nothing to apply).
    public var outcome: String

    /// Creates the answer.
    public init(outcome: String) { self.outcome = outcome }
}

/// A change to the balance the server detected and the app must apply itself (device wallet): a
/// refund or revocation Apple told the server about, its reversal, or an admin edit. Apply each `key`
/// once.
public struct AdjustmentBody: Codable, Sendable, Equatable {
    /// The idempotency key, e.g. `revocation:2000000123`; the app keeps the keys it applied.
    public var key: String
    /// `revocation`, `reversal` or `adjustment`.
    public var kind: String
    /// Credits to add (negative to take back).
    public var amount: Int64
    /// The transaction, for revocations and reversals.
    public var transactionId: String?
    /// The product, for revocations and reversals.
    public var productId: String?
    /// Why, for admin edits.
    public var reason: String?
    /// When the server recorded it.
    public var createdAt: Date

    /// Creates the body.
    public init(
        key: String, kind: String, amount: Int64, transactionId: String?, productId: String?, reason: String?,
        createdAt: Date
    ) {
        self.key = key
        self.kind = kind
        self.amount = amount
        self.transactionId = transactionId
        self.productId = productId
        self.reason = reason
        self.createdAt = createdAt
    }
}

/// `GET /v1/me/adjustments` answers with this: the device wallet's mailbox.
public struct AdjustmentsResponse: Codable, Sendable, Equatable {
    /// The adjustments, oldest first.
    public var adjustments: [AdjustmentBody]

    /// Creates the answer.
    public init(adjustments: [AdjustmentBody]) { self.adjustments = adjustments }
}

/// One purchase the server recorded for the customer (`GET /v1/me/purchases`).
public struct PurchaseRecord: Codable, Sendable, Equatable {
    /// Apple's transaction id.
    public var transactionId: String
    /// The product.
    public var productId: String
    /// `pending`, `delivered`, `revoked` (refunded) or `restored` (a refund Apple reversed).
    public var status: String
    /// The credits it delivered, once delivered.
    public var credits: Int64?
    /// When it was delivered.
    public var deliveredAt: Date?
    /// The environment Apple's data named (Sandbox for App Review on a Production server), when known.
    public var environment: String?
    /// When the customer bought it, as Apple signed it (absent from servers older than this field).
    public var purchaseDate: Date?
    /// `true` for a purchase the app delivered before it used Coffer (`previouslyDelivered`); absent otherwise.
    public var deliveredBeforeCoffer: Bool?

    /// Creates a record.
    public init(
        transactionId: String, productId: String, status: String, credits: Int64?, deliveredAt: Date?,
        environment: String?, purchaseDate: Date? = nil, deliveredBeforeCoffer: Bool? = nil
    ) {
        self.deliveredBeforeCoffer = deliveredBeforeCoffer
        self.transactionId = transactionId
        self.productId = productId
        self.status = status
        self.credits = credits
        self.deliveredAt = deliveredAt
        self.environment = environment
        self.purchaseDate = purchaseDate
    }
}

/// `GET /v1/me/purchases` answers with this: every purchase the server holds for the customer, from any of
/// its devices, oldest first.
public struct PurchasesResponse: Codable, Sendable, Equatable {
    /// The purchases.
    public var purchases: [PurchaseRecord]

    /// Creates the answer.
    public init(purchases: [PurchaseRecord]) { self.purchases = purchases }
}

/// What an event on `GET /v1/me/events` says changed.
public enum ServerEventKind: String, Codable, Sendable, CaseIterable {
    /// Support granted credits: fetch the pending grants.
    case grant
    /// The server detected a refund, a reversal or an admin edit: fetch the adjustments.
    case adjustment
    /// The backup changed (an admin edit, another device): fetch the backup.
    case backup
    /// A purchase, renewal or expiry changed the entitlements: fetch `/v1/me`.
    case entitlements
}

/// One Server-Sent Event of `GET /v1/me/events` (`event:` is the kind, `data:` this JSON).
public struct ServerEventBody: Codable, Sendable, Equatable {
    /// What changed.
    public var type: ServerEventKind
    /// The ledger key or grant id it is about, when there is one.
    public var key: String?

    /// Creates the event.
    public init(type: ServerEventKind, key: String? = nil) {
        self.type = type
        self.key = key
    }
}

/// The body of `POST /v1/receipts/verify`: a legacy app receipt, as older app versions send it.
public struct ReceiptVerifyRequest: Codable, Sendable, Equatable {
    /// The receipt, base64 (`Bundle.main.appStoreReceiptURL`'s contents).
    public var receiptData: String

    /// Creates the body.
    public init(receiptData: String) { self.receiptData = receiptData }
}

/// What happened to one in-app purchase of a legacy receipt.
public struct ReceiptTransactionOutcome: Codable, Sendable, Equatable {
    /// Apple's transaction id.
    public var transactionId: String
    /// The product.
    public var productId: String
    /// `delivered`, `duplicate`, `revoked`, `wrong-user` (another user delivered it first) or
    /// `unknown-product` (the catalog does not sell it).
    public var outcome: String

    /// Creates the outcome.
    public init(transactionId: String, productId: String, outcome: String) {
        self.transactionId = transactionId
        self.productId = productId
        self.outcome = outcome
    }
}

/// `POST /v1/receipts/verify` answers with this.
public struct ReceiptVerifyResponse: Codable, Sendable, Equatable {
    /// One outcome per in-app purchase in the receipt, in its order.
    public var transactions: [ReceiptTransactionOutcome]
    /// The balance after them.
    public var balance: Int64
    /// The entitlements after them.
    public var entitlements: [String]

    /// Creates the answer.
    public init(transactions: [ReceiptTransactionOutcome], balance: Int64, entitlements: [String]) {
        self.transactions = transactions
        self.balance = balance
        self.entitlements = entitlements
    }
}
