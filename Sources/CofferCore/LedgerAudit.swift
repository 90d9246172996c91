/// Checks a user's ledger against its own bookkeeping rules: the check `coffer ledger check` runs and the
/// property tests assert.
public enum LedgerAudit {
    /// Lists everything wrong with a user's entries and wallet; an empty list means the ledger is sound.
    ///
    /// Checked: no key appears twice; each entry's wallet follows from the one before by its deltas;
    /// balance and deficit never go below zero; the wallet equals the last entry's; and
    /// `balance - deficit` equals the sum of the entries' amounts (delivered - taken back + reversed +
    /// granted + adjusted - spent).
    ///
    /// - Parameters:
    ///   - entries: The user's entries, oldest first.
    ///   - wallet: The user's wallet as stored.
    /// - Returns: One line per problem found.
    public static func discrepancies(entries: [LedgerEntry], wallet: Wallet) -> [String] {
        var problems: [String] = []
        var keys = Set<IdempotencyKey>()
        var running = Wallet.empty
        var sum: Int64 = 0
        for entry in entries {
            if !keys.insert(entry.key).inserted { problems.append("key \(entry.key) applied twice") }
            running.balance += entry.balanceDelta
            running.deficit += entry.deficitDelta
            sum += entry.amount
            if running != entry.walletAfter {
                problems.append(
                    "entry \(entry.key): wallet after is \(entry.walletAfter.balance)/\(entry.walletAfter.deficit), "
                        + "deltas give \(running.balance)/\(running.deficit)")
                running = entry.walletAfter
            }
            if running.balance < 0 || running.deficit < 0 { problems.append("entry \(entry.key): wallet below zero") }
            if entry.balanceDelta - entry.deficitDelta != entry.amount {
                problems.append("entry \(entry.key): deltas do not add up to the amount \(entry.amount)")
            }
        }
        if running != wallet {
            problems.append(
                "wallet is \(wallet.balance)/\(wallet.deficit) but the entries give \(running.balance)/\(running.deficit)"
            )
        }
        if wallet.balance - wallet.deficit != sum {
            problems.append("balance - deficit = \(wallet.balance - wallet.deficit) but the entries sum to \(sum)")
        }
        return problems
    }
}
