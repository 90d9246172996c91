import CofferAPI
import CofferCore
import CofferStore
import Foundation

extension AdminService {
    /// The device tokens a customer holds, by how they were issued, for a merge's confirmation: those of installs
    /// that registered themselves (``TokenCounts/devices``: moved with the account owner's code, ended without) and
    /// a CloudKit claim's (``TokenCounts/claims``: always ended).
    ///
    /// - Throws: ``AdminError/notFound(_:)`` for an unknown Support ID.
    public func tokenCounts(environment: AppStoreEnvironment, supportId: String) async throws -> TokenCounts {
        try await store.tokenCounts(owner: find(supportId, environment: environment).id)
    }

    /// Merges an anonymous user into the customer an Apple account is, once, with the customer's word: the merge
    /// code their install shows, or an owner's override with a reason. Balance and deficit, receipts, grants and
    /// subscription states move; the merged user keeps its history, marked merged, and both timelines say so.
    /// Audited `user.merge` (with how it was consented to), and an override also `user.merge.override`.
    ///
    /// The merged installs sign in as the account's customer only with `intoCode`, a merge code an install of the
    /// account shows: a Support ID is read out in the open, so without the account owner's word an install could
    /// be merged into someone else's account and sign in as them. Without it every token of the merged user ends
    /// and its installs register again (with their AppTransaction they find their own Apple account's customer).
    ///
    /// - Throws: ``AdminError/invalid(_:)`` unless `from` is an anonymous user not merged yet and `into` an
    ///   Apple account's user, for a wrong or expired code or an override without a reason;
    ///   ``AdminError/notFound(_:)`` for an unknown Support ID.
    public func mergeUsers(
        environment: AppStoreEnvironment, from: String, into: String, consent: MergeConsent, intoCode: String? = nil,
        actor: String
    ) async throws -> MergeResponse {
        // The override's reason first: a merge refused for it uses up no code.
        if case .override(let text) = consent { _ = try Self.reason(text) }
        let merged = try await find(from, environment: environment)
        let account = try await find(into, environment: environment)
        guard merged.id != account.id else { throw AdminError.invalid("a customer cannot be merged into itself") }
        guard merged.appleAccount == nil else {
            throw AdminError.invalid("\(merged.supportId) is an Apple account's customer; only anonymous users merge")
        }
        guard account.appleAccount != nil, account.mergedInto == nil else {
            throw AdminError.invalid("\(account.supportId) is not an Apple account's customer")
        }
        guard merged.mergedInto == nil else { throw AdminError.invalid("\(merged.supportId) was merged already") }
        guard merged.isLive, account.isLive else {
            throw AdminError.invalid("a customer deleted at their request cannot be merged")
        }
        // Sandbox data never reaches a customer installed from the App Store, through a merge either.
        if account.appleAccount?.environment == .production,
            try await store.receipts(owner: merged.id, environment: environment).contains(where: {
                !Delivery.reaches(data: $0.transaction.environment, customer: .production)
            })
        {
            throw AdminError.invalid(
                "\(merged.supportId) holds Sandbox purchases (TestFlight, App Review, sandbox testers): "
                    + "\(account.supportId) was installed from the App Store and receives none")
        }
        // Both codes' forms are checked before either is used up. The account owner's code is used first, so a
        // wrong one leaves the merged install's code working; a merge that fails after a code was used up needs a
        // new one from that app.
        let intoHash = try Self.mergeCodeHash(intoCode, of: account)
        if case .code(let typed) = consent { _ = try Self.mergeCodeHash(typed, of: merged) }
        if let intoHash, try await !store.useMergeCode(owner: account.id, codeHash: intoHash, at: now()) {
            throw AdminError.invalid(
                "that merge code is not \(account.supportId)'s, or it expired: ask the customer for the code an "
                    + "install on their Apple account shows now (Purchase History, Move to my Apple account)")
        }
        let overrideReason: String?
        switch consent {
        case .code(let typed):
            // Used up before the merge: a merge that fails after needs a new code from the app.
            overrideReason = nil
            guard let hash = MergeCodes.hash(typed),
                try await store.useMergeCode(owner: merged.id, codeHash: hash, at: now())
            else {
                throw AdminError.invalid(
                    "that merge code is not \(merged.supportId)'s, or it expired: ask the customer for the code "
                        + "their app shows now (Purchase History, Move to my Apple account)")
            }
        case .override(let text):
            overrideReason = try Self.reason(text)
        }
        let at = now()
        let result: UserMergeResult
        do {
            // The audit entries are written in the merge's own transaction, on every engine.
            result = try await store.mergeUser(
                UserMerge(
                    from: merged.id, into: account.id, environment: environment,
                    movesBackup: walletMode == .device, movesTokens: intoHash != nil,
                    at: at)
            ) { result in
                let after = try Self.json(Self.mergeResponse(merged: merged, account: account, result: result))
                var events = [account.supportId, merged.supportId].map { subject in
                    AuditEvent(
                        environment: environment, actor: actor, action: "user.merge", subject: subject.rawValue,
                        after: after, at: at)
                }
                if let overrideReason {
                    events.append(
                        AuditEvent(
                            environment: environment, actor: actor, action: "user.merge.override",
                            subject: merged.supportId.rawValue,
                            after: try Self.json(["into": account.supportId.rawValue, "reason": overrideReason]),
                            at: at))
                }
                return events
            }
        } catch StoreError.alreadyExists {
            throw AdminError.invalid("\(merged.supportId) was merged already")
        } catch StoreError.notFound {
            // Changed since it was read: deleted meanwhile, or the account merged into another.
            throw AdminError.notFound("\(merged.supportId) or \(account.supportId) as they were")
        } catch let error as LedgerError {
            throw AdminError.invalid("the merge would overflow a wallet: \(error)")
        }
        await onChange?(merged.id, .merged)
        await onChange?(
            account.id, .adjustment(key: IdempotencyKey(.merge, merged.supportId.rawValue).rawValue))
        return Self.mergeResponse(merged: merged, account: account, result: result)
    }

    /// What a merge answers, and its audit entries record.
    static func mergeResponse(merged: User, account: User, result: UserMergeResult) -> MergeResponse {
        MergeResponse(
            from: merged.supportId.rawValue, into: account.supportId.rawValue, movedBalance: result.moved.balance,
            movedDeficit: result.moved.deficit, balance: result.wallet.balance, deficit: result.wallet.deficit,
            receipts: result.receipts, grants: result.grants, tokensMoved: result.tokensMoved,
            claimTokensEnded: result.claimTokensEnded, tokensEnded: result.tokensEnded)
    }

    /// The hash of a merge code as typed for `user`'s merge, `nil` for none.
    ///
    /// - Throws: ``AdminError/invalid(_:)`` for text that cannot be a merge code.
    static func mergeCodeHash(_ typed: String?, of user: User) throws(AdminError) -> String? {
        guard let typed = typed?.trimmingCharacters(in: .whitespaces), !typed.isEmpty else { return nil }
        guard let hash = MergeCodes.hash(typed) else {
            throw .invalid(
                "\(user.supportId)'s merge code is eight letters and digits, shown as K7QM-2XHP: ask for the code the "
                    + "app shows (Purchase History, Move to my Apple account)")
        }
        return hash
    }
}
