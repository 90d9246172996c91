import Foundation

/// What kind of App Store product a catalog entry is, as App Store Connect names the four kinds.
public enum ProductKind: String, Codable, Sendable, CaseIterable {
    /// Bought any number of times; delivers credits.
    case consumable
    /// Bought once; unlocks entitlements for good (until refunded).
    case nonConsumable
    /// A subscription that renews by itself; unlocks entitlements while active and counts toward loyalty.
    case autoRenewable
    /// A subscription that does not renew; unlocks entitlements for `durationDays` when given.
    case nonRenewing
}

/// One product the app sells.
public struct CatalogProduct: Sendable, Hashable, Encodable {
    /// The App Store product identifier, e.g. `com.example.credits.400k`.
    public var id: String
    /// The product's kind.
    public var kind: ProductKind
    /// Credits of the catalog's default currency delivered per unit bought (a purchase of quantity 3 delivers
    /// `3 × credits`).
    public var credits: Int64
    /// Credits of the catalog's other currencies delivered per unit bought, by currency (none for a catalog of one
    /// currency): a product may give coins and gems.
    public var otherCredits: [Currency: Int64]
    /// The named entitlements this product unlocks, e.g. `["premium"]`.
    public var entitlements: [String]
    /// The subscription group, for auto-renewable products (and loyalty).
    public var group: String?
    /// How long a non-renewing subscription lasts, in days; `nil` means it does not lapse.
    public var durationDays: Int?
    /// The name support sees wherever the product appears (the panel, exports), e.g. "400,000 credits";
    /// `nil` shows the id.
    public var name: String?
    /// For an auto-renewable subscription: the promotional offers (App Store Connect's offer identifiers) Coffer
    /// signs for a customer; `nil` signs any the app asks for, leaving App Store Connect to refuse one it lacks.
    public var offers: [String]?
    /// For an auto-renewable subscription: the credits each paid period gives, by currency (the default one's
    /// too), ending with the period (``Catalog/inEveryCurrency(_:allowances:)``); none by default.
    public var allowance: [Currency: Int64]

    /// Creates a product.
    public init(
        id: String, kind: ProductKind, credits: Int64 = 0, entitlements: [String] = [], group: String? = nil,
        durationDays: Int? = nil, name: String? = nil, offers: [String]? = nil, otherCredits: [Currency: Int64] = [:],
        allowance: [Currency: Int64] = [:]
    ) {
        self.allowance = allowance
        self.id = id
        self.kind = kind
        self.credits = credits
        self.otherCredits = otherCredits
        self.entitlements = entitlements
        self.group = group
        self.durationDays = durationDays
        self.name = name
        self.offers = offers
    }

    /// The name to show: ``name`` when the catalog gives one, else the id.
    public var displayName: String { name ?? id }

    /// The credits one unit delivers in every currency, the default one's under `defaultCurrency`, zeros left out.
    public func creditsByCurrency(default defaultCurrency: Currency) -> [Currency: Int64] {
        var all = otherCredits.filter { $0.value != 0 }
        if credits != 0 { all[defaultCurrency] = credits }
        return all
    }

    private enum CodingKeys: String, CodingKey {
        case id, kind, credits, otherCredits, entitlements, group, durationDays, name, offers, allowance
    }

    /// The product in the catalog file's shape: `credits` the default currency's number (what an app built before
    /// several currencies reads), `otherCredits` the other currencies' by id when there are any.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(kind, forKey: .kind)
        try container.encode(credits, forKey: .credits)
        if !otherCredits.isEmpty {
            try container.encode(
                Dictionary(uniqueKeysWithValues: otherCredits.map { ($0.key.rawValue, $0.value) }),
                forKey: .otherCredits)
        }
        try container.encode(entitlements, forKey: .entitlements)
        try container.encodeIfPresent(group, forKey: .group)
        try container.encodeIfPresent(durationDays, forKey: .durationDays)
        try container.encodeIfPresent(name, forKey: .name)
        try container.encodeIfPresent(offers, forKey: .offers)
        if !allowance.isEmpty {
            try container.encode(
                Dictionary(uniqueKeysWithValues: allowance.map { ($0.key.rawValue, $0.value) }), forKey: .allowance)
        }
    }
}

/// The loyalty rule: `periods` paid, non-revoked subscription periods of `group` (not necessarily
/// consecutive) unlock `entitlements` for life, until refunds take the count below `periods` again.
public struct LoyaltyRule: Sendable, Hashable, Codable {
    /// The number of paid periods a lifetime is earned after when a catalog does not say.
    public static let defaultPeriods = 12

    /// The server's name of a group's loyalty milestone: `loyalty:` and the group in the characters a
    /// milestone takes (lowercase letters, digits, `.`, `_`, `-`; anything else as `-`), at most 64 in all.
    public static func milestoneName(_ group: String) -> String {
        let allowed = Set("abcdefghijklmnopqrstuvwxyz0123456789._-")
        return "loyalty:" + String(group.lowercased().map { allowed.contains($0) ? $0 : "-" }.prefix(56))
    }

    /// The subscription group whose periods count.
    public var group: String
    /// How many paid periods earn the entitlements.
    public var periods: Int
    /// The entitlements earned.
    public var entitlements: [String]

    /// Creates a loyalty rule.
    public init(group: String, periods: Int = defaultPeriods, entitlements: [String]) {
        self.group = group
        self.periods = periods
        self.entitlements = entitlements
    }
}

/// Why a catalog was refused. Each case names the product or rule at fault.
public enum CatalogError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The file is not valid JSON, or a field has the wrong type.
    case malformed(String)
    /// A product's `kind` is not one of the four App Store kinds.
    case unknownKind(productId: String, kind: String)
    /// Two products share one identifier.
    case duplicateProductId(String)
    /// A product has an empty identifier.
    case emptyProductId
    /// A product delivers a negative number of credits.
    case negativeCredits(productId: String, credits: Int64)
    /// A consumable names entitlements; consumables only deliver credits.
    case consumableWithEntitlements(productId: String)
    /// An auto-renewable subscription has no `group`.
    case subscriptionWithoutGroup(productId: String)
    /// A non-renewing subscription has a duration below one day.
    case invalidDuration(productId: String, days: Int)
    /// A loyalty rule names a group that no auto-renewable product belongs to.
    case loyaltyUnknownGroup(String)
    /// A loyalty rule asks for fewer than one period.
    case loyaltyInvalidPeriods(group: String, periods: Int)
    /// Two loyalty rules name the same group.
    case duplicateLoyaltyGroup(String)
    /// A product's display name is empty or longer than 100 characters.
    case invalidName(productId: String)
    /// A product lists offers but is not an auto-renewable subscription, or lists one that cannot be an offer
    /// identifier or lists one twice.
    case invalidOffer(productId: String, offer: String)
    /// The `currencies` list has an id that cannot name a currency, an id twice, a name empty or over 40
    /// characters, or more than ``Catalog/maximumCurrencies`` currencies.
    case invalidCurrency(String)
    /// A product's credits name a currency the `currencies` list does not.
    case unknownCurrency(productId: String, currency: String)

    /// A one-line, human-readable explanation.
    public var description: String {
        switch self {
        case .malformed(let detail): "catalog is not valid: \(detail)"
        case .unknownKind(let id, let kind):
            "product \(id): unknown kind \"\(kind)\" (expected one of "
                + ProductKind.allCases.map(\.rawValue).joined(separator: ", ") + ")"
        case .duplicateProductId(let id): "product id \(id) appears more than once"
        case .emptyProductId: "a product has an empty id"
        case .negativeCredits(let id, let credits): "product \(id): credits must not be negative (got \(credits))"
        case .consumableWithEntitlements(let id): "product \(id): a consumable cannot unlock entitlements"
        case .subscriptionWithoutGroup(let id): "product \(id): an auto-renewable subscription needs a group"
        case .invalidDuration(let id, let days): "product \(id): durationDays must be at least 1 (got \(days))"
        case .loyaltyUnknownGroup(let group): "loyalty rule: no auto-renewable product is in group \(group)"
        case .loyaltyInvalidPeriods(let group, let periods):
            "loyalty rule for group \(group): periods must be at least 1 (got \(periods))"
        case .duplicateLoyaltyGroup(let group): "loyalty rule for group \(group) appears more than once"
        case .invalidName(let id): "product \(id): a name has 1 to 100 characters"
        case .invalidOffer(let id, let offer):
            "product \(id): offer \"\(offer)\" is not allowed (offers are for auto-renewable subscriptions, each "
                + "1 to \(SubscriptionOffers.maximumIdentifierLength) letters, digits, '.', '_' or '-', once)"
        case .invalidCurrency(let detail): "currencies: \(detail)"
        case .unknownCurrency(let id, let currency):
            "product \(id): credits in \"\(currency.prefix(40))\", which the catalog's currencies list does not name"
        }
    }
}

/// The products an app sells and its loyalty rules: the single source of how many credits a purchase
/// delivers and which entitlements it unlocks.
///
/// Load one from the documented JSON shape:
/// ```json
/// {"products": [{"id": "com.example.credits.400k", "kind": "consumable", "credits": 400000},
///               {"id": "com.example.pro.monthly", "kind": "autoRenewable", "group": "pro",
///                "entitlements": ["premium"]}],
///  "loyalty": [{"group": "pro", "periods": 12, "entitlements": ["premium", "lifetime"]}]}
/// ```
public struct Catalog: Sendable, Hashable {
    /// The most currencies a catalog lists.
    public static let maximumCurrencies = 100

    /// The products, in file order.
    public let products: [CatalogProduct]
    /// The loyalty rules, in file order.
    public let loyalty: [LoyaltyRule]
    /// The currencies, the default one first (``Currency/credits`` alone for a catalog that lists none).
    public let currencies: [CurrencyDefinition]
    /// The products that can unlock something: every product but consumables (whose receipts entitlements read).
    public let unlockingProducts: Set<String>
    /// Whether the catalog sells auto-renewable subscriptions (whose grace periods entitlements read).
    public let sellsSubscriptions: Bool
    private let byId: [String: CatalogProduct]

    /// The currency a product's numeric `credits` are of, and the one every balance kept before several currencies
    /// is in: the first the catalog lists.
    public var defaultCurrency: Currency { currencies[0].id }

    /// Whether the catalog lists no currency of its own (its one currency is ``Currency/credits``).
    public var listsCurrencies: Bool { currencies != [Self.implicitCurrency] }

    private static let implicitCurrency = CurrencyDefinition(id: .credits, name: "Credits")

    /// Creates a catalog, checking every rule a loaded file is checked against.
    ///
    /// - Parameters:
    ///   - products: The products, each product's ``CatalogProduct/otherCredits`` in currencies of `currencies`.
    ///   - loyalty: The loyalty rules.
    ///   - currencies: The currencies, the default first; empty for one currency, ``Currency/credits``.
    /// - Throws: ``CatalogError`` naming the first product, rule or currency at fault.
    public init(products: [CatalogProduct], loyalty: [LoyaltyRule] = [], currencies: [CurrencyDefinition] = [])
        throws(CatalogError)
    {
        let currencies = currencies.isEmpty ? [Self.implicitCurrency] : currencies
        guard currencies.count <= Self.maximumCurrencies else {
            throw .invalidCurrency("at most \(Self.maximumCurrencies) currencies (got \(currencies.count))")
        }
        var known = Set<Currency>()
        for currency in currencies {
            guard known.insert(currency.id).inserted else { throw .invalidCurrency("\(currency.id) is listed twice") }
            let name = currency.name.trimmingCharacters(in: .whitespacesAndNewlines)
            guard !name.isEmpty, currency.name.count <= 40 else {
                throw .invalidCurrency("\(currency.id): a name has 1 to 40 characters")
            }
        }
        var byId: [String: CatalogProduct] = [:]
        for product in products {
            guard !product.id.isEmpty else { throw .emptyProductId }
            guard byId[product.id] == nil else { throw .duplicateProductId(product.id) }
            guard product.credits >= 0 else { throw .negativeCredits(productId: product.id, credits: product.credits) }
            if product.kind == .consumable, !product.entitlements.isEmpty {
                throw .consumableWithEntitlements(productId: product.id)
            }
            if product.kind == .autoRenewable, product.group?.isEmpty ?? true {
                throw .subscriptionWithoutGroup(productId: product.id)
            }
            if let days = product.durationDays, days < 1 {
                throw .invalidDuration(productId: product.id, days: days)
            }
            if let name = product.name, name.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty || name.count > 100
            {
                throw .invalidName(productId: product.id)
            }
            for (currency, amount) in product.otherCredits.sorted(by: { $0.key < $1.key }) {
                guard currency != currencies[0].id else {
                    throw .invalidCurrency(
                        "product \(product.id): \(currency) is the default currency: give its credits as credits")
                }
                guard known.contains(currency) else {
                    throw .unknownCurrency(productId: product.id, currency: currency.rawValue)
                }
                guard amount >= 0 else {
                    throw .invalidCurrency(
                        "product \(product.id): credits in \(currency) must not be negative (got \(amount))")
                }
            }
            for (currency, amount) in product.allowance.sorted(by: { $0.key < $1.key }) {
                guard product.kind == .autoRenewable else {
                    throw .malformed(
                        "product \(product.id): only an auto-renewable subscription gives an allowance")
                }
                guard known.contains(currency) else {
                    throw .unknownCurrency(productId: product.id, currency: currency.rawValue)
                }
                guard amount >= 0, amount <= Ledger.maximumAmount else {
                    throw .malformed(
                        "product \(product.id): an allowance in \(currency) is 0 to \(Ledger.maximumAmount) "
                            + "(got \(amount))")
                }
            }
            var offers = Set<String>()
            for offer in product.offers ?? [] {
                guard product.kind == .autoRenewable, SubscriptionOffers.isValidIdentifier(offer),
                    offers.insert(offer).inserted
                else { throw .invalidOffer(productId: product.id, offer: offer) }
            }
            byId[product.id] = product
        }
        let groups = Set(products.filter { $0.kind == .autoRenewable }.compactMap(\.group))
        var ruleGroups = Set<String>()
        for rule in loyalty {
            guard groups.contains(rule.group) else { throw .loyaltyUnknownGroup(rule.group) }
            guard rule.periods >= 1 else { throw .loyaltyInvalidPeriods(group: rule.group, periods: rule.periods) }
            guard ruleGroups.insert(rule.group).inserted else { throw .duplicateLoyaltyGroup(rule.group) }
        }
        self.products = products
        self.loyalty = loyalty
        self.currencies = currencies
        self.unlockingProducts = Set(products.filter { $0.kind != .consumable }.map(\.id))
        self.sellsSubscriptions = products.contains { $0.kind == .autoRenewable }
        self.byId = byId
    }

    /// Loads a catalog from its JSON document. Repeated keys are refused.
    ///
    /// - Parameter data: The file's bytes.
    /// - Throws: ``CatalogError``.
    public init(json data: Data) throws(CatalogError) {
        let document: Document
        do {
            try StrictJSON.validate(data)
            document = try JSONDecoder().decode(Document.self, from: data)
        } catch let error as StrictJSONError {
            throw .malformed(error.description)
        } catch let error as DecodingError {
            throw .malformed(Self.describe(error))
        } catch {
            throw .malformed(String(describing: error))
        }
        var currencies: [CurrencyDefinition] = []
        for entry in document.currencies ?? [] {
            guard let id = Currency(rawValue: entry.id) else { throw .invalidCurrency(Currency.rule(entry.id)) }
            currencies.append(CurrencyDefinition(id: id, name: entry.name ?? entry.id))
        }
        if document.currencies?.isEmpty == true { throw .invalidCurrency("list at least one, or leave the list out") }
        let defaultCurrency = currencies.first?.id ?? .credits
        var products: [CatalogProduct] = []
        for entry in document.products {
            guard let kind = ProductKind(rawValue: entry.kind) else {
                throw .unknownKind(productId: entry.id, kind: entry.kind)
            }
            var product = CatalogProduct(
                id: entry.id, kind: kind, entitlements: entry.entitlements ?? [], group: entry.group,
                durationDays: entry.durationDays, name: entry.name, offers: entry.offers)
            var amounts = entry.otherCredits ?? [:]
            switch entry.credits {
            case .number(let credits): product.credits = credits
            case .byCurrency(let byCurrency):
                guard entry.otherCredits == nil else {
                    throw .malformed("product \(entry.id): credits by currency, or otherCredits, not both")
                }
                amounts = byCurrency
                product.credits = amounts.removeValue(forKey: defaultCurrency.rawValue) ?? 0
            case nil: break
            }
            for (id, amount) in amounts.sorted(by: { $0.key < $1.key }) {
                guard let currency = Currency(rawValue: id) else {
                    throw .invalidCurrency("product \(entry.id): \(Currency.rule(id))")
                }
                product.otherCredits[currency] = amount
            }
            switch entry.allowance {
            case .number(let amount): product.allowance[defaultCurrency] = amount
            case .byCurrency(let byCurrency):
                for (id, amount) in byCurrency.sorted(by: { $0.key < $1.key }) {
                    guard let currency = Currency(rawValue: id) else {
                        throw .invalidCurrency("product \(entry.id): allowance: \(Currency.rule(id))")
                    }
                    product.allowance[currency] = amount
                }
            case nil: break
            }
            products.append(product)
        }
        let rules = (document.loyalty ?? []).map {
            LoyaltyRule(
                group: $0.group, periods: $0.periods ?? LoyaltyRule.defaultPeriods, entitlements: $0.entitlements)
        }
        try self.init(products: products, loyalty: rules, currencies: currencies)
    }

    /// The product with this identifier, or `nil` when the catalog does not sell it.
    public func product(id: String) -> CatalogProduct? { byId[id] }

    /// The catalog in the catalog file's shape (`products` with `id`, `kind`, `credits`, `name`, `entitlements`,
    /// `group`, `durationDays`, `offers`; `loyalty` rules), keys sorted: what `GET /v1/catalog` serves, and what
    /// ``init(json:)`` reads back to the same catalog.
    public func json() -> Data {
        struct File: Encodable {
            var products: [CatalogProduct]
            var loyalty: [LoyaltyRule]
            var currencies: [CurrencyDefinition]?
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        // Strings, numbers and arrays of them only: encoding cannot fail.
        let file = File(products: products, loyalty: loyalty, currencies: listsCurrencies ? currencies : nil)
        return (try? encoder.encode(file)) ?? Data("{}".utf8)
    }

    /// The credits a purchase delivers: `credits × quantity`, and nothing for a family-shared purchase.
    ///
    /// - Parameters:
    ///   - productId: The product bought.
    ///   - quantity: How many units were bought (at least 1).
    ///   - familyShared: Whether the buyer received it through Family Sharing.
    /// - Throws: ``LedgerError/unknownProduct(_:)`` when the catalog does not sell the product,
    ///   ``LedgerError/invalidAmount(_:)`` when the quantity is below 1.
    public func credits(productId: String, quantity: Int, familyShared: Bool) throws(LedgerError) -> Int64 {
        guard let product = byId[productId] else { throw .unknownProduct(productId) }
        // One currency's credits: a product that gives others is refused by a path that keeps one currency, never
        // delivered without them. Every delivery path (the server's and the device wallet's) delivers every currency
        // (`defaultCredits(for:)`, `inEveryCurrency(_:allowances:)`).
        guard product.otherCredits.allSatisfy({ $0.value == 0 }) else {
            throw .unknownProduct("\(productId) (credits in several currencies, which one currency cannot hold)")
        }
        guard quantity >= 1 else { throw .invalidAmount(Int64(quantity)) }
        if familyShared { return 0 }
        let (total, overflow) = product.credits.multipliedReportingOverflow(by: Int64(quantity))
        guard !overflow else { throw .invalidAmount(Int64(quantity)) }
        return total
    }

    /// The credits a purchase delivers in each currency: each currency's credits × `quantity`, and nothing for a
    /// family-shared purchase; currencies the product gives none of are left out.
    ///
    /// - Throws: As ``credits(productId:quantity:familyShared:)``.
    public func creditsByCurrency(productId: String, quantity: Int, familyShared: Bool) throws(LedgerError)
        -> [Currency: Int64]
    {
        guard let product = byId[productId] else { throw .unknownProduct(productId) }
        guard quantity >= 1 else { throw .invalidAmount(Int64(quantity)) }
        if familyShared { return [:] }
        var total: [Currency: Int64] = [:]
        for (currency, credits) in product.creditsByCurrency(default: defaultCurrency) {
            let (amount, overflow) = credits.multipliedReportingOverflow(by: Int64(quantity))
            guard !overflow else { throw .invalidAmount(Int64(quantity)) }
            total[currency] = amount
        }
        return total
    }

    private struct Document: Decodable {
        /// A product's `credits`: a number of the default currency, or an object by currency id.
        enum Credits: Decodable {
            case number(Int64)
            case byCurrency([String: Int64])

            init(from decoder: any Decoder) throws {
                let container = try decoder.singleValueContainer()
                if let number = try? container.decode(Int64.self) {
                    self = .number(number)
                } else if let byCurrency = try? container.decode([String: Int64].self) {
                    self = .byCurrency(byCurrency)
                } else {
                    throw DecodingError.dataCorrupted(
                        DecodingError.Context(
                            codingPath: decoder.codingPath,
                            debugDescription: "expected a whole number of credits, or an object of them by currency"))
                }
            }
        }
        struct Entry: Decodable {
            var id: String
            var kind: String
            var credits: Credits?
            var otherCredits: [String: Int64]?
            var entitlements: [String]?
            var group: String?
            var durationDays: Int?
            var name: String?
            var offers: [String]?
            var allowance: Credits?
        }
        struct Rule: Decodable {
            var group: String
            var periods: Int?
            var entitlements: [String]
        }
        struct CurrencyEntry: Decodable {
            var id: String
            var name: String?
        }
        var products: [Entry]
        var loyalty: [Rule]?
        var currencies: [CurrencyEntry]?
    }

    private static func describe(_ error: DecodingError) -> String {
        func path(_ context: DecodingError.Context) -> String {
            let components = context.codingPath.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }
            return components.isEmpty ? "document" : components.joined().trimmingCharacters(in: ["."])
        }
        switch error {
        case .keyNotFound(let key, let context):
            let at = path(context)
            return "missing field \"\(key.stringValue)\"" + (context.codingPath.isEmpty ? "" : " in \(at)")
        case .typeMismatch(let type, let context): return "\(path(context)): expected \(type)"
        case .valueNotFound(let type, let context): return "\(path(context)): expected \(type), found null"
        case .dataCorrupted(let context): return "\(path(context)): \(context.debugDescription)"
        @unknown default: return String(describing: error)
        }
    }
}
