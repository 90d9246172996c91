import CofferCore
import Foundation

/// Support merging an anonymous user into an account user (``UserStore/mergeUser(_:)``).
public struct UserMerge: Sendable, Hashable {
    /// The anonymous user, merged away (its Support ID, as stored, keys the merge's entries).
    public var from: UUID
    /// The account user it joins.
    public var into: UUID
    /// Their environment.
    public var environment: AppStoreEnvironment
    /// Device wallet: what moves is the balance the anonymous install last backed up, and its deficit (the
    /// account's devices learn of it through the mailbox). Server wallet: its ledger wallet.
    public var movesBackup: Bool
    /// Whether the tokens of installs that registered themselves move to the account user (the account's owner said
    /// so with a merge code of their own); otherwise every token of the merged user ends, and its installs register
    /// again (with their AppTransaction they find their own Apple account's customer).
    public var movesTokens: Bool
    /// When.
    public var at: Date

    /// Creates the request.
    public init(
        from: UUID, into: UUID, environment: AppStoreEnvironment, movesBackup: Bool,
        movesTokens: Bool = false, at: Date
    ) {
        self.from = from
        self.into = into
        self.environment = environment
        self.movesBackup = movesBackup
        self.movesTokens = movesTokens
        self.at = at
    }
}

/// What a merge moved.
public struct UserMergeResult: Sendable, Hashable, Codable {
    /// The credits (balance) and deficit added to the account user.
    public var moved: Wallet
    /// The account user's wallet after.
    public var wallet: Wallet
    /// Receipts that changed owner.
    public var receipts: Int
    /// Grants that changed recipient.
    public var grants: Int
    /// Tokens of installs that registered themselves, now signing in as the account user.
    public var tokensMoved: Int
    /// Tokens a CloudKit claim issued to the merged user: ended, never moved (the device registers again).
    public var claimTokensEnded: Int
    /// Tokens of installs that registered themselves, ended because the account's owner gave no code of their own
    /// (the installs register again).
    public var tokensEnded: Int

    /// Creates the result.
    public init(
        moved: Wallet, wallet: Wallet, receipts: Int, grants: Int, tokensMoved: Int = 0, claimTokensEnded: Int = 0,
        tokensEnded: Int = 0
    ) {
        self.moved = moved
        self.wallet = wallet
        self.receipts = receipts
        self.grants = grants
        self.tokensMoved = tokensMoved
        self.claimTokensEnded = claimTokensEnded
        self.tokensEnded = tokensEnded
    }
}

/// How an install came by its token (``UserStore/addToken(tokenHash:owner:origin:at:)``).
public enum TokenOrigin: String, Sendable, Hashable, Codable, CaseIterable {
    /// The install registered itself: an anonymous user's first token, or its Apple account's AppTransaction. A
    /// merge moves it to the account user.
    case device
    /// A CloudKit claim issued it on the strength of an imported customer's record name: a merge never moves it,
    /// it ends (the device registers again with its AppTransaction).
    case claim
}

/// The live tokens a user holds, by origin (what a merge's confirmation names).
public struct TokenCounts: Sendable, Hashable, Codable {
    /// Tokens of installs that registered themselves.
    public var devices: Int
    /// Tokens a CloudKit claim issued.
    public var claims: Int

    /// Counts.
    public init(devices: Int, claims: Int) {
        self.devices = devices
        self.claims = claims
    }
}

/// A one-time merge code a customer's install shows (``UserStore/saveMergeCode(_:)``): support types it in to
/// merge that customer into another, so a Support ID read out in the open is not enough.
public struct MergeCode: Sendable, Hashable {
    /// The customer whose install asked for it.
    public var owner: UUID
    /// Their environment.
    public var environment: AppStoreEnvironment
    /// A hash of the code (the code itself is shown once, on the device).
    public var codeHash: String
    /// When it was made.
    public var createdAt: Date
    /// When it stops working.
    public var expiresAt: Date

    /// A code.
    public init(owner: UUID, environment: AppStoreEnvironment, codeHash: String, createdAt: Date, expiresAt: Date) {
        self.owner = owner
        self.environment = environment
        self.codeHash = codeHash
        self.createdAt = createdAt
        self.expiresAt = expiresAt
    }
}
