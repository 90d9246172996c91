/// Which subscription offers Coffer signs for a customer, and whether a customer may take a subscription's
/// introductory offer: the rules `POST /v1/me/offers/sign` and `POST /v1/me/offers/introductory-eligibility`
/// ask, kept apart from the signing itself.
public enum SubscriptionOffers {
    /// The longest offer identifier taken.
    public static let maximumIdentifierLength = 100

    /// Whether `identifier` can name an App Store Connect offer: 1 to 100 ASCII letters, digits, `.`, `_` and `-`.
    /// Nothing else is signed: the earlier signature joins its fields with U+2063, and an identifier may not carry
    /// a separator of its own.
    public static func isValidIdentifier(_ identifier: String) -> Bool {
        !identifier.isEmpty && identifier.utf8.count <= maximumIdentifierLength
            && identifier.utf8.allSatisfy { byte in
                (48...57).contains(byte) || (65...90).contains(byte) || (97...122).contains(byte)
                    || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
            }
    }

    /// The product a promotional offer is signed for: an auto-renewable subscription of the catalog, with
    /// `offerIdentifier` among its `offers` when the catalog lists them (a catalog that lists none leaves the
    /// offers to App Store Connect, which refuses an identifier it does not know).
    ///
    /// - Throws: ``OfferError``.
    public static func promotionalOffer(_ offerIdentifier: String, productId: String, in catalog: Catalog)
        throws(OfferError) -> CatalogProduct
    {
        let product = try subscription(productId, in: catalog)
        guard isValidIdentifier(offerIdentifier) else { throw .invalidOfferIdentifier }
        if let offers = product.offers, !offers.contains(offerIdentifier) {
            throw .unknownOffer(productId: productId, offerIdentifier: offerIdentifier)
        }
        return product
    }

    /// Whether a customer may take the introductory offer of `productId`: only one who never bought a subscription
    /// of its group, as the App Store's own rule says, read from every purchase Coffer recorded for them
    /// (refunded ones too: they took the offer then).
    ///
    /// - Parameters:
    ///   - productId: The subscription the customer is about to buy.
    ///   - purchased: The product ids of the customer's recorded purchases.
    /// - Throws: ``OfferError`` for a product that is not a subscription of the catalog.
    public static func allowsIntroductoryOffer(
        productId: String, purchased: some Sequence<String>, in catalog: Catalog
    ) throws(OfferError) -> Bool {
        try groupProducts(of: productId, in: catalog).isDisjoint(with: purchased)
    }

    /// The subscriptions of `productId`'s group, itself included: a purchase of any of them spends the group's
    /// introductory offer.
    ///
    /// - Throws: ``OfferError`` for a product that is not a subscription of the catalog.
    public static func groupProducts(of productId: String, in catalog: Catalog) throws(OfferError) -> Set<String> {
        let group = try subscription(productId, in: catalog).group
        return Set(catalog.products.filter { $0.kind == .autoRenewable && $0.group == group }.map(\.id))
    }

    private static func subscription(_ productId: String, in catalog: Catalog) throws(OfferError) -> CatalogProduct {
        guard let product = catalog.product(id: productId) else { throw .unknownProduct(productId) }
        guard product.kind == .autoRenewable else { throw .notASubscription(productId) }
        return product
    }
}

/// Why an offer is not signed.
public enum OfferError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The catalog does not sell the product.
    case unknownProduct(String)
    /// Offers are for auto-renewable subscriptions; this product is not one.
    case notASubscription(String)
    /// The offer identifier is empty, too long or has characters App Store Connect's do not.
    case invalidOfferIdentifier
    /// The catalog lists the product's offers, and not this one.
    case unknownOffer(productId: String, offerIdentifier: String)

    /// A one-line explanation.
    public var description: String {
        switch self {
        case .unknownProduct(let id): "the catalog does not sell \(id)"
        case .notASubscription(let id): "\(id) is not an auto-renewable subscription: only those have offers"
        case .invalidOfferIdentifier:
            "an offer identifier has 1 to \(SubscriptionOffers.maximumIdentifierLength) letters, digits, '.', '_' or '-'"
        case .unknownOffer(let id, let offer): "the catalog lists no offer \(offer) for \(id) (its \"offers\")"
        }
    }
}
