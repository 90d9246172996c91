import ArgumentParser
import Foundation

extension AppStoreSimCommand {
    /// `coffer appstore-sim price-increase ORIGINAL_ID --price 12.99 [--no-consent]`.
    struct PriceIncrease: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "price-increase",
            abstract:
                "Raise a subscription's price from its next renewal (PRICE_INCREASE/PENDING until accepted; EXPIRED/"
                + "PRICE_INCREASE at renewal if never accepted; ACCEPTED at once with --no-consent).")
        @OptionGroup var action: TransactionAction
        @Option(help: "The new price, e.g. 12.99 (0.01-999999.99).") var price: String
        @Flag(help: "An increase the customer is only told about, with no consent asked.") var noConsent = false

        func run() async throws {
            guard price.wholeMatch(of: /[0-9]{1,6}(\.[0-9]{1,2})?/) != nil, let amount = Decimal(string: price),
                amount > 0
            else { throw ValidationError("--price must be a number 0.01-999999.99, e.g. 12.99") }
            let milliunits = NSDecimalNumber(decimal: amount * 1_000).int64Value
            try await action.remote.control(
                "price-increase",
                [
                    "originalTransactionId": action.transactionId, "price": milliunits, "consentRequired": !noConsent,
                ])
        }
    }

    /// `coffer appstore-sim accept-price-increase ORIGINAL_ID`.
    struct AcceptPriceIncrease: IdControl {
        static let configuration = CommandConfiguration(
            commandName: "accept-price-increase",
            abstract: "The customer accepts a subscription's pending price increase (PRICE_INCREASE/ACCEPTED).")
        static let (control, field) = ("accept-price-increase", "originalTransactionId")
        @OptionGroup var action: TransactionAction
    }

    /// `coffer appstore-sim remove-from-sale PRODUCT`.
    struct RemoveFromSale: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "remove-from-sale",
            abstract: "Take a subscription off sale: its subscribers expire at renewal (EXPIRED/PRODUCT_NOT_FOR_SALE).")
        @OptionGroup var remote: Remote
        @Argument(help: "The product id.") var productId: String
        func run() async throws { try await remote.control("remove-from-sale", ["productId": productId]) }
    }

    /// `coffer appstore-sim rescind-consent ACCOUNT`.
    struct RescindConsent: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "rescind-consent",
            abstract: "A parent or guardian withdraws consent for an account (RESCIND_CONSENT).")
        @OptionGroup var remote: Remote
        @Argument(help: "The simulated account.") var account: String
        func run() async throws { try await remote.control("rescind-consent", ["account": account]) }
    }

    /// `coffer appstore-sim extend ORIGINAL_ID --days N`.
    struct Extend: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Extend one subscription's renewal date, as Apple's API does (RENEWAL_EXTENDED).")
        @OptionGroup var action: TransactionAction
        @Option(help: "Days, 1-90.") var days: Int32
        func validate() throws {
            guard (1...90).contains(days) else { throw ValidationError("--days must be 1-90") }
        }
        func run() async throws {
            try await action.remote.control("extend", ["originalTransactionId": action.transactionId, "days": days])
        }
    }

    /// `coffer appstore-sim extend-all PRODUCT --days N [--storefront USA ...]`.
    struct ExtendAll: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "extend-all",
            abstract:
                "Extend every active subscriber of a product (RENEWAL_EXTENDED, RENEWAL_EXTENSION/FAILURE, then "
                + "RENEWAL_EXTENSION/SUMMARY).")
        @OptionGroup var remote: Remote
        @Argument(help: "The subscription product id.") var productId: String
        @Option(help: "Days, 1-90.") var days: Int32
        @Option(help: "Only this storefront (ISO 3166-1 alpha-3); repeat for more.") var storefront: [String] = []
        func validate() throws {
            guard (1...90).contains(days) else { throw ValidationError("--days must be 1-90") }
        }
        func run() async throws {
            var body: [String: any Sendable] = ["productId": productId, "days": days]
            if !storefront.isEmpty { body["storefronts"] = storefront }
            try await remote.control("extend-all", body)
        }
    }
}
