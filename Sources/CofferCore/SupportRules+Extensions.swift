/// The rules of support's subscription extensions, Apple's own (Extend a Subscription Renewal Date): decided here
/// for the panel, the admin API and the CLI alike.
extension SupportRules {
    /// The most days one extension may add: Apple's limit.
    public static let maximumExtensionDays = 90

    /// Apple's reasons for an extension (`extendReasonCode`), by code.
    public static let extensionReasons: [Int32: String] = [
        0: "undeclared", 1: "customer satisfaction", 2: "other", 3: "service issue or outage",
    ]

    /// The days of an extension: from 1 to ``maximumExtensionDays``.
    public static func extensionDays(_ days: Int) throws(SupportRuleError) -> Int32 {
        guard days >= 1, days <= maximumExtensionDays else {
            throw SupportRuleError("an extension adds 1 to \(maximumExtensionDays) days (Apple's limit), not \(days)")
        }
        return Int32(days)
    }

    /// An extension's reason code: one of Apple's (0 undeclared, 1 customer satisfaction, 2 other, 3 service issue
    /// or outage).
    public static func extensionReasonCode(_ code: Int) throws(SupportRuleError) -> Int32 {
        guard let code = Int32(exactly: code), extensionReasons[code] != nil else {
            throw SupportRuleError(
                "a reason code is 0 (undeclared), 1 (customer satisfaction), 2 (other) or 3 (service issue or "
                    + "outage), not \(code)")
        }
        return code
    }

    /// The storefronts a mass extension is limited to: ISO 3166-1 alpha-3 codes (`USA`), at most 250, each once;
    /// none means every storefront.
    public static func storefronts(_ codes: [String]) throws(SupportRuleError) -> [String] {
        guard codes.count <= 250 else { throw SupportRuleError("at most 250 storefronts") }
        var seen = Set<String>()
        for code in codes {
            guard code.utf8.count == 3, code.utf8.allSatisfy({ (65...90).contains($0) }), seen.insert(code).inserted
            else { throw SupportRuleError("a storefront is three capital letters (ISO 3166-1 alpha-3), once: \(code)") }
        }
        return codes
    }
}

/// The rules of support's entitlements for a time.
extension SupportRules {
    /// The longest an entitlement is granted for, in days: ten years.
    public static let maximumEntitlementDays = 3_650

    /// The days an entitlement is granted for: from 1 to ``maximumEntitlementDays``.
    public static func entitlementDays(_ days: Int) throws(SupportRuleError) -> Int {
        guard days >= 1, days <= maximumEntitlementDays else {
            throw SupportRuleError("an entitlement is granted for 1 to \(maximumEntitlementDays) days, not \(days)")
        }
        return days
    }

    /// An entitlement support may grant: one the catalog's products or loyalty rules unlock.
    public static func entitlement(_ name: String, in catalog: Catalog) throws(SupportRuleError) -> String {
        let known = Set(catalog.products.flatMap(\.entitlements) + catalog.loyalty.flatMap(\.entitlements))
        guard known.contains(name) else {
            throw SupportRuleError(
                "\(name) is not an entitlement of the catalog (" + known.sorted().joined(separator: ", ") + ")")
        }
        return name
    }
}
