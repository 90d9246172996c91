import ArgumentParser
import AsyncHTTPClient
import CofferAppStore
import CofferCore
import CofferSimulator
import Crypto
import Foundation
import Hummingbird
import NIOCore
import NIOFoundationCompat
import NIOHTTP1

/// `coffer appstore-sim ...`: the App Store simulator, Apple on a developer's laptop.
struct AppStoreSimCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "appstore-sim",
        abstract: "The App Store simulator: sign, serve and notify like Apple, for testing a backend.",
        discussion: """
            `init DIR` creates a certificate chain shaped like Apple's and an App Store Server API key. `serve` runs \
            Apple's servers locally (verifyReceipt, the App Store Server API, Notifications V2 to --notify). The \
            other commands drive a running simulator and print what happened. Trust DIR/root.der in Sandbox only: \
            Coffer refuses it in Production.
            """,
        subcommands: [
            Init.self, Serve.self, Purchase.self, AskToBuy.self, Refund.self, RequestRefund.self, DeclineRefund.self,
            ReverseRefund.self, Renew.self, Expire.self, AutoRenew.self, Billing.self, AdvanceClock.self,
            Family.self, LeaveFamily.self, History.self, Signed.self, Receipt.self, RedeemOfferCode.self,
            CloudKitRecords.self, Forge.self, PriceIncrease.self, AcceptPriceIncrease.self, RemoveFromSale.self,
            RescindConsent.self, Extend.self, ExtendAll.self, RateLimit.self,
        ]
    )

    /// The CloudKit server-to-server key `init` writes next to the chain (its public half is what CloudKit Console
    /// would hold): `coffer import cloudkit` signs with it.
    struct CloudKitKeyFile: Codable {
        static let file = "cloudkit-key.json"
        static let pem = "cloudkit-key.pem"
        var keyId: String
        var privateKeyFile: String
        /// The container's API token, as CloudKit Console shows one (`coffer serve --cloudkit-api-token`): the
        /// simulated `users/caller` answers requests that carry it. Absent in folders made before.
        var apiToken: String?
    }

    /// The API key files `init` writes next to the chain.
    struct APIKey: Codable {
        static let file = "api-key.json"
        var keyId: String
        var issuerId: String
        var privateKeyFile: String
    }

    // MARK: init

    /// `coffer appstore-sim init DIR`.
    struct Init: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create the simulator's certificate chain and App Store Server API key in a folder.")

        @Argument(help: "The folder to create (it must not hold a chain already).")
        var folder: String

        @Option(help: "Years the signing certificate stays valid.")
        var years = 10

        func run() async throws {
            let url = URL(fileURLWithPath: folder)
            if FileManager.default.fileExists(atPath: url.appendingPathComponent("root.der").path) {
                throw ValidationError("\(folder) already holds a chain; use another folder")
            }
            let now = Date()
            let pki = try SimulatorPKI(
                validFrom: now.addingTimeInterval(-86_400),
                leafValidUntil: now.addingTimeInterval(Double(years) * 365 * 86_400))
            try pki.write(to: url)
            // App receipts are signed as Apple's are: RSA, leaf -> WWDR-like intermediate -> root, both OIDs.
            try SimulatorReceiptAuthority(
                validFrom: now.addingTimeInterval(-86_400),
                validUntil: now.addingTimeInterval(Double(years) * 365 * 86_400)
            ).write(to: url)
            let key = P256.Signing.PrivateKey()
            let keyId = "SIM" + String(UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(7))
            let keyFile = "SubscriptionKey_\(keyId).p8"
            let keyURL = url.appendingPathComponent(keyFile)
            try OwnerOnlyFile.write(Data(key.pemRepresentation.utf8), to: keyURL.path, exclusive: false)
            let apiKey = APIKey(keyId: keyId, issuerId: UUID().uuidString.lowercased(), privateKeyFile: keyFile)
            try JSONEncoder.pretty.encode(apiKey).write(to: url.appendingPathComponent(APIKey.file))
            let cloudKitKey = P256.Signing.PrivateKey()
            let cloudKit = CloudKitKeyFile(
                keyId: Data(SHA256.hash(data: cloudKitKey.publicKey.derRepresentation)).prefix(32).map {
                    String(format: "%02x", $0)
                }.joined(), privateKeyFile: CloudKitKeyFile.pem,
                apiToken: (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined())
            try OwnerOnlyFile.write(
                Data(cloudKitKey.pemRepresentation.utf8), to: url.appendingPathComponent(CloudKitKeyFile.pem).path,
                exclusive: false)
            try JSONEncoder.pretty.encode(cloudKit).write(to: url.appendingPathComponent(CloudKitKeyFile.file))
            print(
                """
                created the simulator's chain and API key in \(folder)
                  root.der                trust it in Sandbox only (coffer verify --root \(folder)/root.der)
                  leaf.pem, leaf-key.pem  what the simulator signs with
                  receipt-root.der        the root of its app receipts (coffer receipt --root \(folder)/receipt-root.der)
                  \(keyFile)  App Store Server API key \(keyId), issuer \(apiKey.issuerId)
                  \(CloudKitKeyFile.pem)        CloudKit server-to-server key \(cloudKit.keyId)
                next: coffer appstore-sim serve --folder \(folder) --catalog CATALOG.json --bundle-id ID
                """)
        }
    }

    // MARK: serve

    /// `coffer appstore-sim serve`.
    struct Serve: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Run Apple's servers locally: verifyReceipt, the App Store Server API, notifications.")

        @Option(help: "The folder made by `coffer appstore-sim init`.")
        var folder: String

        @Option(help: "The Coffer catalog of products to sell (JSON).")
        var catalog: String

        @Option(help: "The app's bundle id.")
        var bundleId: String

        @Option(help: "The app's Apple id.")
        var appAppleId: Int64 = 1_234_567_890

        @Option(help: "The environment the data says it comes from: Sandbox or Production.")
        var environment = "Sandbox"

        @Option(help: "The address to listen on.")
        var host = "127.0.0.1"

        @Option(help: "The port to listen on.")
        var port = 8090

        @Option(help: "Where to post App Store Server Notifications V2 (the app server's URL).")
        var notify: String?

        @Option(help: "How many times faster than Apple notification retries happen (1, 12, 24, 48, 72 hours).")
        var timeScale: Double = 1

        @Option(help: "The verifyReceipt shared secret to require for subscriptions.")
        var sharedSecret: String?

        @Option(help: "Days of billing grace period after a failed renewal (0: none).")
        var gracePeriodDays = 16

        @Option(
            name: .customLong("reviewer"),
            help: """
                An account that buys in the sandbox from the production build, as App Review and TestFlight do: \
                its data says Sandbox when --environment is Production (repeatable).
                """)
        var reviewers: [String] = []

        @Option(
            name: .customLong("offer-code"),
            help: "An offer code the customer can redeem on the device's sheet, as CODE=PRODUCT_ID (repeatable).")
        var offerCodes: [String] = []

        @Option(
            name: .customLong("win-back-offer"),
            help:
                "A win-back offer of a subscription, as OFFER_ID=PRODUCT_ID (repeatable): a lapsed subscriber may buy with it."
        )
        var winBackOffers: [String] = []

        @Option(
            name: .customLong("product-name"),
            help: "A product's display name on the device, as PRODUCT_ID=NAME (repeatable; else the id).")
        var productNames: [String] = []

        @Option(help: "The currency prices are shown in (ISO 4217).")
        var currency = "USD"

        @Option(help: "The CloudKit container whose public database is simulated (default iCloud. and the bundle id).")
        var cloudkitContainer: String?

        @Flag(
            help: """
                Keep finished consumables in the device's Transaction.all, as an app with                 SKIncludeConsumableInAppPurchaseHistory does (by default they leave it, as on an iPhone).
                """)
        var includeConsumableHistory = false

        static func pairs(_ values: [String], _ option: String) throws -> [String: String] {
            var pairs: [String: String] = [:]
            for value in values {
                let parts = value.split(separator: "=", maxSplits: 1).map(String.init)
                guard parts.count == 2, !parts[0].isEmpty, !parts[1].isEmpty else {
                    throw ValidationError("--\(option) takes KEY=VALUE, got \(value)")
                }
                pairs[parts[0]] = parts[1]
            }
            return pairs
        }

        func run() async throws {
            guard let environment = SignedDataEnvironment(name: environment), !environment.isLocal else {
                throw ValidationError("unknown environment \(self.environment): use Sandbox or Production")
            }
            let folderURL = URL(fileURLWithPath: folder)
            let pki = try SimulatorPKI(folder: folderURL)
            let apiKey = try JSONDecoder().decode(
                APIKey.self, from: Data(contentsOf: folderURL.appendingPathComponent(APIKey.file)))
            let publicKey = try P256.Signing.PrivateKey(
                pemRepresentation: String(
                    contentsOf: folderURL.appendingPathComponent(apiKey.privateKeyFile), encoding: .utf8)
            ).publicKey
            let products = try Catalog(json: Data(contentsOf: URL(fileURLWithPath: catalog)))
            var configuration = SimulatorConfiguration(
                bundleId: bundleId, appAppleId: appAppleId, environment: environment)
            configuration.sharedSecret = sharedSecret
            configuration.gracePeriodDays = gracePeriodDays
            configuration.reviewers = Set(reviewers)
            configuration.offerCodes = try Self.pairs(offerCodes, "offer-code")
            configuration.productNames = try Self.pairs(productNames, "product-name")
            configuration.currency = currency
            configuration.includeConsumableHistory = includeConsumableHistory
            for (code, product) in configuration.offerCodes where products.product(id: product) == nil {
                throw ValidationError("offer code \(code): \(product) is not in the catalog")
            }
            let tokens = APITokenVerifier(
                keys: [apiKey.keyId: publicKey], issuerId: apiKey.issuerId, bundleId: bundleId)
            // The App Store knows the app's In-App Purchase key: the offers Coffer signs with it are checked on purchase.
            configuration.offerKeys = tokens
            for value in winBackOffers {
                let parts = value.split(separator: "=", maxSplits: 1).map(String.init)
                guard parts.count == 2, !parts[0].isEmpty, !parts[1].isEmpty else {
                    throw ValidationError("--win-back-offer takes OFFER_ID=PRODUCT_ID, not \(value)")
                }
                configuration.winBackOffers[parts[1], default: []].append(parts[0])
            }
            for (product, _) in configuration.winBackOffers where products.product(id: product)?.kind != .autoRenewable
            {
                throw ValidationError(
                    "win-back offer for \(product): not an auto-renewable subscription of the catalog")
            }
            let store = SimulatedAppStore(
                catalog: products, configuration: configuration, signer: try pki.signer(),
                clock: SimulatorClock(start: Date()), receiptAuthority: try SimulatorReceiptAuthority(folder: folderURL)
            )
            // A folder made before the simulator had CloudKit has no CloudKit key: its requests are all refused.
            let cloudKitFile = folderURL.appendingPathComponent(CloudKitKeyFile.file)
            var cloudKitKeys: [String: P256.Signing.PublicKey] = [:]
            var cloudKitTokens: Set<String> = []
            if FileManager.default.fileExists(atPath: cloudKitFile.path) {
                let key = try JSONDecoder().decode(CloudKitKeyFile.self, from: Data(contentsOf: cloudKitFile))
                if let token = key.apiToken { cloudKitTokens.insert(token) }
                cloudKitKeys[key.keyId] = try P256.Signing.PrivateKey(
                    pemRepresentation: String(
                        contentsOf: folderURL.appendingPathComponent(key.privateKeyFile), encoding: .utf8)
                ).publicKey
            }
            let container = cloudkitContainer ?? "iCloud.\(bundleId)"
            let cloudKit = SimulatedCloudKit(container: container, keys: cloudKitKeys, apiTokens: cloudKitTokens)
            let app = Application(
                router: SimulatorServer.router(store: store, tokens: tokens, cloudKit: cloudKit),
                configuration: .init(address: .hostname(host, port: port), serverName: "coffer-appstore-sim"))
            let base = "http://\(host):\(port)"
            print(
                """
                App Store simulator for \(bundleId) (\(environment.rawValue)), \(products.products.count) products\
                \(reviewers.isEmpty ? "" : ", reviewers buying in the sandbox: " + reviewers.joined(separator: ", "))
                  verifyReceipt           \(base)/verifyReceipt/production  \(base)/verifyReceipt/sandbox
                  App Store Server API    \(base)/inApps/...  (key \(apiKey.keyId), issuer \(apiKey.issuerId))
                  notifications           \(notify ?? "not sent (no --notify)")
                  CloudKit Web Services   \(base)/database/1/\(container)/...  (\(cloudKitKeys.isEmpty
                    ? "no key in the folder: every request refused" : "key \(cloudKitKeys.keys.joined())"))
                  drive it                coffer appstore-sim purchase --server \(base) ...
                """)
            let http = HTTPClient(eventLoopGroupProvider: .singleton)
            let delivery = notify.map {
                NotificationDelivery(store: store, url: $0, httpClient: http, timeScale: timeScale)
            }
            let deliveryTask = Task { await delivery?.run() }
            do {
                try await app.runService()
            } catch {
                deliveryTask.cancel()
                try await http.shutdown()
                throw error
            }
            deliveryTask.cancel()
            try await http.shutdown()
        }
    }
}

extension JSONEncoder {
    fileprivate static var pretty: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        return encoder
    }
}
