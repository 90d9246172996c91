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
