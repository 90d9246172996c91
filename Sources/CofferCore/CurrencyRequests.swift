import Foundation

extension Catalog {
    /// The credits a transaction's purchase delivers in the default currency, whatever it gives in others (which
    /// ``inEveryCurrency(_:allowances:)`` delivers beside it): what a path that applies every currency asks, where
    /// ``credits(productId:quantity:familyShared:)`` refuses a product that gives other currencies.
    ///
    /// - Throws: ``LedgerError/unknownProduct(_:)`` or ``LedgerError/invalidAmount(_:)``.
    public func defaultCredits(for fact: TransactionFact) throws(LedgerError) -> Int64 {
        try creditsByCurrency(productId: fact.productId, quantity: fact.quantity, familyShared: fact.isFamilyShared)[
            defaultCurrency] ?? 0
    }

    /// The requests that carry out a request about a transaction in every currency its product gives: the request
    /// itself (the default currency's, which entitlements and support read), then the same event in each other
    /// currency the product gives credits or an allowance in, in the currencies' order (a purchase with that
    /// currency's credits × quantity, nothing for a family-shared one; a refund or a reversal as it is, each taking
    /// back or restoring what that currency's ledger delivered). A purchase of a paid subscription period
    /// (``allowance(for:)``) is followed, in each currency, by the period's allowance (``LedgerEvent/allowance(_:credits:)``,
    /// ending with the period). Any other request, one already in another currency, and a product that gives only
    /// the default currency's credits come back alone, so a single-currency catalog applies exactly what it did
    /// before.
    ///
    /// - Throws: ``LedgerError/invalidAmount(_:)`` when a currency's credits × quantity overflow (the default
    ///   currency's would have refused already).
    /// - Parameter allowances: Whether a paid period earns its allowance: not for a legacy receipt's periods, whose
    ///   data says neither the price nor Family Sharing.
    public func inEveryCurrency(_ request: LedgerRequest, allowances earning: Bool = true) throws(LedgerError)
        -> [LedgerRequest]
    {
        guard request.currency == nil, let fact = request.event.transaction, let product = product(id: fact.productId)
        else { return [request] }
        let allowances = earning ? allowance(for: request) : [:]
        let others = Set(product.otherCredits.filter { $0.value != 0 }.keys)
            .union(product.allowance.filter { $0.value != 0 }.keys).subtracting([defaultCurrency])
        guard currencies.count > 1 && !others.isEmpty || !allowances.isEmpty else { return [request] }
        var amounts: [Currency: Int64] = [:]
        switch request.event {
        case .purchase, .deliveredBeforeCoffer:
            amounts = try creditsByCurrency(
                productId: fact.productId, quantity: fact.quantity, familyShared: fact.isFamilyShared)
        default:
            break
        }
        var requests = [request]
        if let amount = allowances[defaultCurrency] {
            requests.append(allowanceRequest(request, fact, amount, currency: nil))
        }
        for currency in others.sorted() {
            var other = request
            other.currency = currency
            // The default currency's request answers with the entitlements; the batch is the same.
            other.entitlementCatalog = nil
            switch request.event {
            case .purchase(let fact, _):
                other.event = .purchase(fact, credits: amounts[currency] ?? 0)
            case .deliveredBeforeCoffer(let fact, _):
                other.event = .deliveredBeforeCoffer(fact, credits: amounts[currency] ?? 0)
            default:
                break
            }
            requests.append(other)
            if let amount = allowances[currency] {
                requests.append(allowanceRequest(request, fact, amount, currency: currency))
            }
        }
        return requests
    }

    /// `requests` (what ``inEveryCurrency(_:allowances:)`` made of `request`) reaching every currency that delivered
    /// the transaction, whatever the catalog says now (a product changed, a currency dropped): for a refund or a
    /// reversal in the default currency, `request` again in each of `delivered` (the currencies holding its receipt)
    /// the requests leave out. Anything else comes back as it is.
    public static func reaching(
        _ requests: [LedgerRequest], of request: LedgerRequest, delivered: [Currency]
    ) -> [LedgerRequest] {
        guard request.currency == nil, request.event.isWord else { return requests }
        var requests = requests
        let covered = Set(requests.compactMap(\.currency))
        for currency in delivered where !covered.contains(currency) {
            var other = request
            other.currency = currency
            other.entitlementCatalog = nil
            requests.append(other)
        }
        return requests
    }

    /// The allowance a request's purchase earns in each currency (``CatalogProduct/allowance``): for the purchase of
    /// a paid period of an auto-renewable subscription (not a free trial, nor a period at no price, nor one received
    /// through Family Sharing, nor one already refunded or upgraded) still running at the request's time; none for
    /// anything else, nor for a purchase delivered before Coffer (the old app gave what it gave).
    public func allowance(for request: LedgerRequest) -> [Currency: Int64] {
        guard case .purchase(let fact, _) = request.event, let product = product(id: fact.productId),
            product.kind == .autoRenewable, !product.allowance.isEmpty, !fact.isTrial, !fact.isFamilyShared,
            !fact.isUpgraded, fact.revocationDate == nil, fact.price.map({ $0 > 0 }) ?? true,
            let end = fact.expiresDate, end > request.at
        else { return [:] }
        return product.allowance.filter { $0.value > 0 }
    }

    /// The request crediting a period's allowance in a currency, ending at the period's end.
    private func allowanceRequest(
        _ request: LedgerRequest, _ fact: TransactionFact, _ amount: Int64, currency: Currency?
    )
        -> LedgerRequest
    {
        var allowance = request
        allowance.event = .allowance(fact, credits: amount)
        allowance.currency = currency
        allowance.entitlementCatalog = nil
        allowance.expiresAt = fact.expiresDate
        return allowance
    }

    /// One result per request given to ``inEveryCurrency(_:allowances:)``, from the results of the requests it
    /// made (`counts[i]` of them for the `i`th, in order): the default currency's result, its wallet as the last of
    /// the default currency's requests left it (a period's allowance follows its purchase), or the first refusal
    /// among its currencies, so a purchase refused in one currency is never answered as delivered.
    ///
    /// - Parameter requests: The requests made, one per result, or none (each group's first result as it is).
    public static func folded(
        _ results: [Result<LedgerResult, LedgerError>], requests: [LedgerRequest] = [], counts: [Int]
    ) -> [Result<LedgerResult, LedgerError>] {
        var folded: [Result<LedgerResult, LedgerError>] = []
        var start = 0
        for count in counts {
            let range = start..<min(results.count, start + count)
            start += count
            let group = results[range]
            let refusal = group.first { if case .failure = $0 { true } else { false } }
            guard let first = group.first else { continue }
            if let refusal {
                folded.append(refusal)
                continue
            }
            guard case .success(var answer) = first, requests.count == results.count else {
                folded.append(first)
                continue
            }
            for index in range where requests[index].currency == nil {
                if case .success(let later) = results[index] { answer.wallet = later.wallet }
            }
            folded.append(.success(answer))
        }
        return folded
    }
}

extension Catalog {
    /// A currency's display name as the catalog lists it, or its id for one the catalog no longer lists.
    public func currencyName(_ currency: Currency) -> String {
        currencies.first { $0.id == currency }?.name ?? currency.rawValue
    }
}
