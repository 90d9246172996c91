import Foundation

/// Apple's word on a delivered purchase: a refund (in full or a prorated share) takes back what it delivered, a
/// reversal restores what the refunds took.
extension Ledger {
    static func revocation(
        _ fact: TransactionFact,
        owner: UUID,
        wallet: Wallet,
        receipt existing: Receipt?,
        now: Date
    ) -> LedgerDecision {
        let revokedAt = fact.revocationDate ?? now
        if let existing, existing.isRevoked {
            // Refunded already: a larger share now (a full refund after a prorated one) takes the rest, keyed by its
            // date. A later refund date is remembered, so a reversal older than it stays superseded.
            // Only a share Apple states takes more (a source that does not say, a legacy receipt, never does), and
            // only a refund after the last reversal (one dated before it was reversed already).
            let known = existing.revokedAt ?? revokedAt
            let target = fact.refundedShare(of: existing.deliveredCredits ?? 0)
            if let share = fact.revocationPercentage, target > existing.refundedCredits,
                existing.reversedAt.map({ revokedAt > $0 }) ?? true
            {
                let key = IdempotencyKey(
                    .revocation, "\(fact.transactionId)@\(Milliseconds.from(revokedAt))~\(share)")
                return takeBack(
                    target - existing.refundedCredits, for: fact, on: existing, at: max(revokedAt, known), key: key,
                    owner: owner, wallet: wallet, now: now)
            }
            guard revokedAt > known else { return unchanged(.duplicate, wallet) }
            var receipt = existing
            receipt.revokedAt = revokedAt
            receipt.transaction.revocationDate = revokedAt
            receipt.transaction.learnRefund(from: fact)
            receipt.transaction.revocationPercentage = existing.transaction.revocationPercentage
            return LedgerDecision(outcome: .duplicate, wallet: wallet, receipt: receipt, entry: nil)
        }
        if let existing, let reversedAt = existing.reversedAt, revokedAt <= reversedAt {
            return unchanged(.superseded, wallet)
        }
        var receipt = existing ?? Receipt(owner: owner, transaction: fact)
        receipt.takenFromBalance = 0
        receipt.addedToDeficit = 0
        return takeBack(
            fact.refundedShare(of: receipt.deliveredCredits ?? 0), for: fact, on: receipt, at: revokedAt,
            key: wordKey(.revocation, fact, first: existing?.revokedAt == nil, at: revokedAt), owner: owner,
            wallet: wallet, now: now)
    }

    /// A revocation's entry: `taken` more credits back, recorded on the receipt (what came from the balance, what
    /// became deficit) and, for a prorated refund, the share in the entry's reason.
    private static func takeBack(
        _ taken: Int64, for fact: TransactionFact, on existing: Receipt, at revokedAt: Date, key: IdempotencyKey,
        owner: UUID, wallet: Wallet, now: Date
    ) -> LedgerDecision {
        var receipt = existing
        receipt.revokedAt = revokedAt
        receipt.transaction.revocationDate = revokedAt
        receipt.transaction.learnRefund(from: fact)
        let after = takeBack(taken, from: wallet)
        receipt.takenFromBalance += wallet.balance - after.balance
        receipt.addedToDeficit += after.deficit - wallet.deficit
        let reason = fact.revocationPercentage.flatMap { percentage in
            fact.isProratedRefund
                ? "prorated refund of \(Payment.percentText(percentage)): \(receipt.refundedCredits) of "
                    + "\(receipt.deliveredCredits ?? 0) credits taken back" : nil
        }
        return applied(
            key: key, owner: owner, amount: -taken, before: wallet, after: after, fact: fact, receipt: receipt,
            reason: reason, now: now)
    }

    static func reversal(
        _ fact: TransactionFact,
        at reversedAt: Date,
        owner: UUID,
        wallet: Wallet,
        receipt existing: Receipt?,
        policy: DeficitPolicy,
        now: Date
    ) -> LedgerDecision {
        if let existing, !existing.isRevoked, existing.reversedAt != nil {
            return unchanged(.duplicate, wallet)
        }
        if let existing, let revokedAt = existing.revokedAt, existing.isRevoked, reversedAt < revokedAt {
            // A refund dated after this reversal is Apple's latest word.
            return unchanged(.superseded, wallet)
        }
        let key = wordKey(.reversal, fact, first: existing?.reversedAt == nil, at: reversedAt)
        var receipt = existing ?? Receipt(owner: owner, transaction: fact)
        let wasRevoked = receipt.isRevoked
        receipt.reversedAt = reversedAt
        receipt.transaction.revocationDate = nil
        receipt.transaction.revocationPercentage = nil
        receipt.transaction.keepPayment(of: fact)
        var after = wallet
        var restored: Int64 = 0
        if wasRevoked, receipt.deliveredCredits != nil {
            // What the refund took (all that was delivered, or a prorated share) comes back.
            restored = receipt.takenFromBalance + receipt.addedToDeficit
            switch policy {
            case .collect:
                after = credit(restored, to: wallet, policy: .collect)
            case .forgive:
                // Cancel only the deficit this revocation recorded; other deficits stay forgiven.
                let cancelled = min(wallet.deficit, receipt.addedToDeficit)
                after.deficit -= cancelled
                after.balance += restored - cancelled
            }
        }
        return applied(
            key: key, owner: owner, amount: restored, before: wallet, after: after, fact: fact, receipt: receipt,
            reason: nil, now: now)
    }
}
