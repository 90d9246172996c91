import CofferAPI
import CofferCore
import CofferStoreKit
import Foundation

extension CofferSDK {
    /// Buys a product: the intent is saved first, StoreKit is asked, and the transaction is delivered once
    /// and finished only after that is durable.
    public func purchase(productId: String, quantity: Int = 1) async throws -> PurchaseResult {
        try await purchase(productId: productId, quantity: quantity, offer: nil)
    }

    /// Buys as ``purchase(productId:quantity:)`` does, with a subscription offer StoreKit applies.
    func purchase(productId: String, quantity: Int, offer: StorePurchaseOffer?) async throws -> PurchaseResult {
        let user = try await localUser()
        guard catalog.product(id: productId) != nil else {
            throw SDKError.unknownProduct(productId)
        }
        let intent = UUID()
        configuration.log(.info, .purchase, "purchase \(productId) ×\(quantity): asking StoreKit")
        try state.startIntent(id: intent, productId: productId, quantity: quantity, at: now())
        try crashAfter(.intentSaved)
        let result = try await storeKit.purchase(
            productId: productId, quantity: quantity, appAccountToken: user.appAccountToken, offer: offer)
        switch result {
        case .userCancelled:
            try state.endIntent(id: intent, state: "cancelled")
            configuration.log(.info, .purchase, "purchase \(productId): the customer cancelled")
            return .cancelled
        case .pending:
            try state.endIntent(id: intent, state: "pending")
            configuration.log(.info, .purchase, "purchase \(productId): pending (Ask to Buy or another step)")
            return .pending
        case .success(let transaction):
            try crashAfter(.purchased)
            let finished = try await handle(transaction, startedHere: true)
            if let why = try unverifiedRefusal(transaction.id) {
                try state.endIntent(id: intent, state: "unverified")
                configuration.log(
                    .notice, .purchase,
                    "purchase \(productId): transaction \(transaction.id) not verified by StoreKit nor the server (\(why)); finished, nothing delivered"
                )
                throw SDKError.unverifiedPurchase(transactionId: transaction.id, reason: why)
            }
            try state.endIntent(id: intent, state: finished ? "done" : "deferred")
            // Backed up now when the server is reachable (device wallet), else on the next launch; a backup that
            // keeps losing to another device is tried again by the next one.
            do {
                _ = try await syncBackup()
            } catch ServerClientError.transport {
            } catch SDKError.conflict(let why) {
                lastBackupFailure = why
            }
            if transaction.revocationDate != nil {
                configuration.log(
                    .info, .purchase, "purchase \(productId): transaction \(transaction.id) refunded already")
                return .revoked(transactionId: transaction.id)
            }
            guard finished else {
                configuration.log(
                    .info, .purchase,
                    "purchase \(productId): transaction \(transaction.id) deferred until the server answers (left unfinished)"
                )
                return .deferred(transactionId: transaction.id)
            }
            let credits = try await wallet.credits(of: transaction.id, self)
            configuration.log(
                .info, .purchase,
                "purchase \(productId): transaction \(transaction.id) delivered (\(credits ?? 0) credits) and finished")
            return .delivered(transactionId: transaction.id, credits: credits ?? 0)
        }
    }

    /// Handles one transaction from a purchase, the updates stream or launch: remembered for the server,
    /// delivered (or taken back, when refunded) once, then finished.
    ///
    /// A transaction whose account token names another user (bought by another install of the app on the same
    /// Apple account: StoreKit shows the account's unfinished transactions on every device) is left alone:
    /// not delivered, posted or finished here, so the install that bought it delivers it, once.
    ///
    /// - Returns: Whether the transaction is finished (the server wallet defers it while the server is
    ///   out of reach).
    ///
    /// In the device wallet, one Apple account's devices are one customer: a purchase another device made (not
    /// started here, never seen here) is left for that device for ``SDKConfiguration/otherDeviceGrace``, so the
    /// credits land on one device's balance, not on each.
    ///
    /// A transaction StoreKit could not verify on the device is delivered on no one's word but the server's: the
    /// server verifies its signed form, and it is delivered only when its fields are that form's; refused as not
    /// Apple's, it is finished and kept with why (``unverifiedRefusal(_:)``).
    @discardableResult
    public func handle(_ transaction: StoreTransaction, startedHere: Bool = false) async throws -> Bool {
        if !transaction.isVerified { return try await handleUnverified(transaction, startedHere: startedHere) }
        let user = try await localUser()
        if try await boughtByAnotherUser(transaction) { return false }
        if !startedHere, try leftForAnotherDevice(transaction) { return false }
        try state.remember(id: transaction.id, jws: transaction.jwsRepresentation, at: now())
        try crashAfter(.remembered)
        return try await wallet.deliver(transaction, to: user, self)
    }

    /// A transaction StoreKit could not verify on the device (`VerificationResult.unverified`): its fields are only
    /// the device's word, so nothing is delivered or remembered on them. Its signed form goes to the server, which
    /// verifies it with Apple's full policy:
    /// - accepted there (StoreKit's check failed on this device alone), it is delivered as any verified one, once
    ///   its fields are found to be its signed form's (the server's answer names it, and the signed payload says
    ///   the same id, product, quantity, kind, ownership, account token and refund): a device that pairs another
    ///   purchase's genuine signed form with fields of its own delivers nothing;
    /// - refused there as not Apple's (a verification failure: forged or tampered data), or its fields not its
    ///   signed form's, it is finished with StoreKit, so it is not met again on every launch, and kept with why
    ///   (``unverifiedRefusal(_:)``, the launch report, ``SDKError/unverifiedPurchase(transactionId:reason:)``);
    /// - refused for another reason (a product this catalog does not sell, a token the server refuses) or with the
    ///   server out of reach, it stays unfinished for a later launch, as a verified one would.
    ///
    /// - Returns: Whether it is finished.
    func handleUnverified(_ transaction: StoreTransaction, startedHere: Bool) async throws -> Bool {
        if try unverifiedRefusal(transaction.id) != nil {
            await storeKit.finish(transactionId: transaction.id)
            return true
        }
        let answer: TransactionResponse
        do {
            answer = try await signedIn {
                try await server.post(
                    signedTransaction: transaction.jwsRepresentation, previouslyDelivered: false, token: $0)
            }
        } catch ServerClientError.transport {
            return false
        } catch ServerClientError.refused(403, Self.wrongUser, _) {
            // Signed by Apple after all, and another user's: their install delivers and finishes it.
            return false
        } catch ServerClientError.refused(let status, let code, let message) {
            guard status == 422, Self.verificationCodes.contains(code) else {
                try state.set("refused:\(transaction.id)", "\(status) \(code)")
                return false
            }
            return try await refuseUnverified(transaction, why: "\(status) \(code): \(message)")
        }
        guard answer.transactionId == transaction.id, Self.matchesSignedForm(transaction) else {
            return try await refuseUnverified(
                transaction, why: "its fields are not those of its signed form (transaction \(answer.transactionId))")
        }
        var verified = transaction
        verified.verificationFailure = nil
        return try await handle(verified, startedHere: startedHere)
    }

    /// The server's codes for signed data that is not Apple's (its verifier's statuses; a retryable failure is a
    /// 503, tried again).
    static let verificationCodes: Set<String> = [
        "VERIFICATION_FAILURE", "INVALID_APP_IDENTIFIER", "INVALID_ENVIRONMENT", "INVALID_CHAIN_LENGTH",
        "INVALID_CERTIFICATE", "INVALID_CHAIN",
    ]

    /// Finishes an unverified transaction refused for good, keeping why.
    private func refuseUnverified(_ transaction: StoreTransaction, why: String) async throws -> Bool {
        try state.set(Self.unverifiedKey(transaction.id), why)
        await storeKit.finish(transactionId: transaction.id)
        return true
    }

    /// Whether the fields StoreKit reported are its signed payload's: the id, the original id, the product, the
    /// quantity, the kind, Family Sharing, the account token and whether it is refunded. The payload is read, not
    /// verified: the server verified the signed form it was sent.
    static func matchesSignedForm(_ transaction: StoreTransaction) -> Bool {
        let parts = transaction.jwsRepresentation.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else { return false }
        var base64 = parts[1].replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        guard let data = Data(base64Encoded: base64),
            let payload = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any]
        else { return false }
        let token = (payload["appAccountToken"] as? String).flatMap(UUID.init(uuidString:))
        let quantity = (payload["quantity"] as? NSNumber)?.intValue ?? 1
        return payload["transactionId"] as? String == transaction.id
            && payload["originalTransactionId"] as? String == transaction.originalId
            && payload["productId"] as? String == transaction.productId && quantity == transaction.quantity
            && payload["type"] as? String == transaction.productType.rawValue
            && (payload["inAppOwnershipType"] as? String == "FAMILY_SHARED") == transaction.isFamilyShared
            && token == transaction.appAccountToken
            && (payload["revocationDate"] != nil) == (transaction.revocationDate != nil)
    }

    /// Why the server refused a transaction StoreKit could not verify (it was then finished), or `nil`.
    public func unverifiedRefusal(_ transactionId: String) throws -> String? {
        try state.value(Self.unverifiedKey(transactionId))
    }

    static func unverifiedKey(_ transactionId: String) -> String { "unverified:" + transactionId }

    /// Whether the transaction's account token names another user than this install's.
    func boughtByAnotherUser(_ transaction: StoreTransaction) async throws -> Bool {
        guard let token = transaction.appAccountToken else { return false }
        return try await !isOwnToken(token)
    }

    /// Whether a transaction is another device's to deliver: device wallet, the account's customer, not seen
    /// or started here, and younger than the grace.
    func leftForAnotherDevice(_ transaction: StoreTransaction) throws -> Bool {
        guard configuration.wallet == .device, configuration.identity == .appleAccount,
            transaction.appAccountToken != nil, transaction.revocationDate == nil,
            now().timeIntervalSince(transaction.purchaseDate) < configuration.otherDeviceGrace
        else { return false }
        return try !state.isRemembered(id: transaction.id)
            && !state.hasOpenIntent(productId: transaction.productId)
    }

    /// Applies a transaction to the local ledger in every currency its product gives: a purchase delivers, a
    /// refunded one takes back.
    func deliverLocally(_ transaction: StoreTransaction, to user: LocalUser) async throws {
        let event = try Delivery.event(for: Self.fact(transaction), catalog: catalog)
        let result = try await applyInEveryCurrency(
            LedgerRequest(
                owner: user.id, environment: configuration.environment, event: event,
                policy: configuration.deficitPolicy, at: now()))
        keepWallet(result.wallet)
        publish(.wallet)
        // The server lists the same refund in the mailbox under the same key; kept with the identity, so an
        // app reinstalled and restored from a backup that already has it taken back never takes it twice.
        if case .revocation = event {
            if result.outcome == .applied {
                configuration.log(.info, .refund, "refund of transaction \(transaction.id) taken back on this device")
            }
            try rememberMailbox([event.key.rawValue])
            // A refund taken back changes the balance: backed up like any change (a purchase is backed up by
            // the purchase flow and launch).
            if result.outcome == .applied { scheduleBackup() }
        }
    }

    /// Posts the outbox: every remembered transaction the server has not acknowledged.
    ///
    /// - Returns: How many the server acknowledged now.
    @discardableResult
    public func postOutbox() async throws -> Int {
        var acknowledged = 0
        for item in try state.outbox() where try await post(id: item.id, jws: item.jws) {
            acknowledged += 1
        }
        return acknowledged
    }

    /// Posts one transaction; `true` once the server answered (delivered, duplicate or revoked).
    func post(id: String, jws: String) async throws -> Bool {
        let answer: TransactionResponse
        do {
            let before = try deliveredBeforeCoffer(id)
            answer = try await signedIn {
                try await server.post(signedTransaction: jws, previouslyDelivered: before, token: $0)
            }
        } catch ServerClientError.transport {
            return false
        } catch ServerClientError.refused(403, Self.wrongUser, _) {
            // Another user's install presented it first (a purchase without an account token, made outside the
            // app): it is theirs. What this install delivered is taken back, and it leaves the outbox; the server
            // holds it delivered, so it may be finished.
            try await wallet.takeBack(id, self)
            try state.posted(id: id, outcome: Self.wrongUser, credits: 0, at: now())
            return true
        } catch ServerClientError.refused(let status, let code, _) {
            // Kept in the outbox and retried on each launch: a refusal (forged data, an unknown product) is
            // support's to look at. In the server wallet the transaction also stays unfinished with Apple.
            try state.set("refused:\(id)", "\(status) \(code)")
            return false
        }
        try crashAfter(.posted)
        try state.posted(id: id, outcome: answer.outcome.rawValue, credits: answer.credits, at: now())
        publish(.wallet)
        return true
    }

    /// The server's code for a transaction that belongs to another user, kept as its outcome.
    static let wrongUser = "wrong-user"

    /// "Move to my Apple account": a one-time code (valid 15 minutes) the customer reads to support, who types it
    /// in to merge this install's customer into their Apple account's customer. Each call replaces the code before.
    public func mergeCode() async throws -> MergeCodeResponse {
        try await signedIn { try await server.mergeCode(bearer: $0) }
    }

    func credentials() async throws -> Credentials {
        _ = try await localUser()
        // A provisional user (a first launch offline) is not registered yet: as if the server were out of reach.
        guard let credentials else { throw ServerClientError.transport("not registered with the server yet") }
        return credentials
    }
}
