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
            CloudKitRecords.self,
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
            guard let environment = AppStoreEnvironment(name: environment), !environment.isLocal else {
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
            let store = SimulatedAppStore(
                catalog: products, configuration: configuration, signer: try pki.signer(),
                clock: SimulatorClock(start: Date()), receiptAuthority: try SimulatorReceiptAuthority(folder: folderURL)
            )
            let tokens = APITokenVerifier(
                keys: [apiKey.keyId: publicKey], issuerId: apiKey.issuerId, bundleId: bundleId)
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

    // MARK: Driving a running simulator

    /// Where the simulator runs, and how to print its answers.
    struct Remote: ParsableArguments {
        @Option(help: "The running simulator.")
        var server = "http://127.0.0.1:8090"

        @Flag(help: "Print the simulator's JSON answer.")
        var json = false

        /// Posts a control and prints the report; a refusal exits 1.
        func control(_ name: String, _ body: [String: any Sendable]) async throws {
            let data = try await send(.POST, "/simulator/\(name)", body: body)
            if json {
                print(String(decoding: data, as: UTF8.self))
                return
            }
            let report = try JSONDecoder().decode(SimulatorReport.self, from: data)
            for line in report.happened { print(line) }
            if !report.notifications.isEmpty {
                print("notifications: \(report.notifications.joined(separator: ", "))")
            }
            if let pending = report.pendingId {
                print("approve or decline with: coffer appstore-sim ask-to-buy \(pending)")
            }
        }

        /// Sends a request; answers other than 200 print the simulator's error and exit 1.
        func send(_ method: NIOHTTP1.HTTPMethod, _ path: String, body: [String: any Sendable]? = nil) async throws
            -> Data
        {
            let http = HTTPClient(eventLoopGroupProvider: .singleton)
            var request = HTTPClientRequest(url: server + path)
            request.method = method
            if let body {
                request.headers.add(name: "Content-Type", value: "application/json")
                request.body = .bytes(ByteBuffer(data: try JSONSerialization.data(withJSONObject: body)))
            }
            let outcome: Result<(UInt, Data), any Error>
            do {
                let response = try await http.execute(request, timeout: .seconds(30))
                let data = Data(buffer: try await response.body.collect(upTo: 16 << 20))
                outcome = .success((response.status.code, data))
            } catch {
                outcome = .failure(error)
            }
            try await http.shutdown()
            switch outcome {
            case .failure(let error):
                FileHandle.standardError.write(
                    Data("Error: the simulator at \(server) cannot be reached: \(error)\n".utf8))
                throw ExitCode(1)
            case .success((200, let data)):
                return data
            case .success(let (status, data)):
                let refusal = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
                let message = refusal?["message"] as? String ?? String(decoding: data, as: UTF8.self)
                FileHandle.standardError.write(Data("Error (\(status)): \(message)\n".utf8))
                throw ExitCode(1)
            }
        }
    }

    /// `coffer appstore-sim purchase`.
    struct Purchase: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Buy a product for a simulated account.")
        @OptionGroup var remote: Remote
        @Option(help: "The simulated Apple account.") var account: String
        @Option(help: "The product id.") var product: String
        @Option(help: "Units (consumables).") var quantity = 1
        @Option(help: "success, cancelled or ask-to-buy.") var outcome = "success"
        @Option(help: "The app account token (a UUID).") var appAccountToken: String?

        func run() async throws {
            guard PurchaseOutcome(rawValue: outcome) != nil else {
                throw ValidationError("unknown outcome \(outcome): use success, cancelled or ask-to-buy")
            }
            var body: [String: any Sendable] = [
                "account": account, "productId": product, "quantity": quantity, "outcome": outcome,
            ]
            if let appAccountToken {
                guard UUID(uuidString: appAccountToken) != nil else {
                    throw ValidationError("--app-account-token must be a UUID")
                }
                body["appAccountToken"] = appAccountToken
            }
            try await remote.control("purchase", body)
        }
    }

    /// `coffer appstore-sim cloudkit-records FILE`.
    struct CloudKitRecords: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "cloudkit-records",
            abstract: "Save records in the simulated CloudKit public database (to rehearse coffer import cloudkit).",
            discussion: """
                FILE holds {"records": [...]} as CloudKit Web Services writes records: recordName, recordType and \
                fields such as {"ownerRecordName": {"value": "_abc", "type": "STRING"}, "bankroll": {"value": 5000, \
                "type": "INT64"}}. Records of the same name are replaced.
                """)
        @OptionGroup var remote: Remote
        @Argument(help: "The JSON file of records.") var file: String
        @Option(help: "development or production.") var cloudkitEnvironment = "development"

        func run() async throws {
            let data: Data
            do {
                data = try Data(contentsOf: URL(fileURLWithPath: file))
            } catch {
                throw ValidationError("cannot read \(file): \(error.localizedDescription)")
            }
            guard let body = try? JSONSerialization.jsonObject(with: data) as? [String: any Sendable],
                body["records"] is [Any]
            else { throw ValidationError("\(file) must hold {\"records\": [...]}") }
            let answer = try await remote.send(
                .POST, "/simulator/cloudkit/records?environment=\(cloudkitEnvironment)", body: body)
            if remote.json {
                print(String(decoding: answer, as: UTF8.self))
            } else {
                let saved = (try? JSONSerialization.jsonObject(with: answer) as? [String: Any])?["saved"] ?? 0
                print("saved \(saved) records in the simulated CloudKit (\(cloudkitEnvironment))")
            }
        }
    }

    /// `coffer appstore-sim redeem-offer-code`.
    struct RedeemOfferCode: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "redeem-offer-code",
            abstract:
                "Redeem an offer code (from serve --offer-code) for a simulated account, as its device's sheet does.")
        @OptionGroup var remote: Remote
        @Option(help: "The simulated Apple account.") var account: String
        @Argument(help: "The offer code.") var code: String

        func run() async throws {
            try await remote.control("redeem-offer-code", ["account": account, "code": code])
        }
    }

    /// `coffer appstore-sim ask-to-buy ID`.
    struct AskToBuy: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "ask-to-buy", abstract: "Approve (default) or decline an Ask to Buy request.")
        @OptionGroup var remote: Remote
        @Argument(help: "The pending request id printed by the purchase.") var pendingId: String
        @Flag(help: "Decline instead of approve.") var decline = false

        func run() async throws {
            try await remote.control("ask-to-buy", ["transactionId": pendingId, "approve": !decline])
        }
    }

    /// `coffer appstore-sim refund ID`.
    struct Refund: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Refund a transaction, fully or prorated.")
        @OptionGroup var remote: Remote
        @Argument(help: "The transaction id.") var transactionId: String
        @Option(help: "A prorated refund, in thousandths of a percent (50000 = 50%).") var percentage: Int?

        func run() async throws {
            var body: [String: any Sendable] = ["transactionId": transactionId]
            if let percentage { body["percentage"] = percentage }
            try await remote.control("refund", body)
        }
    }

    /// A command that acts on one transaction id.
    struct TransactionAction: ParsableArguments {
        @OptionGroup var remote: Remote
        @Argument(help: "The transaction id.") var transactionId: String
    }

    /// A command that sends one control about one transaction (or subscription) id.
    protocol IdControl: AsyncParsableCommand {
        /// The control's name on the simulator.
        static var control: String { get }
        /// The body field the id goes in.
        static var field: String { get }
        /// The id and the simulator.
        var action: TransactionAction { get }
    }

    /// `coffer appstore-sim request-refund ID`.
    struct RequestRefund: IdControl {
        static let configuration = CommandConfiguration(
            commandName: "request-refund", abstract: "The customer asks for a refund (CONSUMPTION_REQUEST).")
        static let (control, field) = ("request-refund", "transactionId")
        @OptionGroup var action: TransactionAction
    }

    /// `coffer appstore-sim decline-refund ID`.
    struct DeclineRefund: IdControl {
        static let configuration = CommandConfiguration(
            commandName: "decline-refund", abstract: "Turn a refund request down (REFUND_DECLINED).")
        static let (control, field) = ("decline-refund", "transactionId")
        @OptionGroup var action: TransactionAction
    }

    /// `coffer appstore-sim reverse-refund ID`.
    struct ReverseRefund: IdControl {
        static let configuration = CommandConfiguration(
            commandName: "reverse-refund", abstract: "Reverse a refund (REFUND_REVERSED).")
        static let (control, field) = ("reverse-refund", "transactionId")
        @OptionGroup var action: TransactionAction
    }

    /// `coffer appstore-sim renew ORIGINAL_ID`.
    struct Renew: IdControl {
        static let configuration = CommandConfiguration(
            abstract: "Renew a subscription now (its period ends now; the next one is charged).")
        static let (control, field) = ("renew", "originalTransactionId")
        @OptionGroup var action: TransactionAction
    }

    /// `coffer appstore-sim expire ORIGINAL_ID`.
    struct Expire: IdControl {
        static let configuration = CommandConfiguration(
            abstract: "Turn auto-renew off and end a subscription now (EXPIRED/VOLUNTARY).")
        static let (control, field) = ("expire", "originalTransactionId")
        @OptionGroup var action: TransactionAction
    }

    /// `coffer appstore-sim auto-renew ORIGINAL_ID on|off`.
    struct AutoRenew: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "auto-renew", abstract: "Turn a subscription's auto-renewal on or off.")
        @OptionGroup var action: TransactionAction
        @Argument(help: "on or off.") var state: String
        func run() async throws {
            guard state == "on" || state == "off" else { throw ValidationError("say on or off") }
            try await action.remote.control(
                "auto-renew", ["originalTransactionId": action.transactionId, "on": state == "on"])
        }
    }

    /// `coffer appstore-sim billing ACCOUNT fails|works`.
    struct Billing: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Make an account's payment method fail (renewals go to billing retry) or work again.")
        @OptionGroup var remote: Remote
        @Argument(help: "The simulated account.") var account: String
        @Argument(help: "fails or works.") var state: String
        func run() async throws {
            guard state == "fails" || state == "works" else { throw ValidationError("say fails or works") }
            try await remote.control("billing", ["account": account, "on": state == "works"])
        }
    }

    /// `coffer appstore-sim advance-clock DURATION`.
    struct AdvanceClock: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "advance-clock",
            abstract: "Move the simulated clock forward; renewals, retries and expiries due happen in order.")
        @OptionGroup var remote: Remote
        @Argument(help: "How far: 90s, 45m, 12h, 31d.") var duration: String

        func run() async throws {
            guard let seconds = Self.seconds(duration) else {
                throw ValidationError("cannot read \(duration): use a number followed by s, m, h or d, e.g. 31d")
            }
            try await remote.control("advance-clock", ["seconds": seconds])
        }

        static func seconds(_ text: String) -> Double? {
            let units: [Character: Double] = ["s": 1, "m": 60, "h": 3_600, "d": 86_400]
            guard let unit = text.last.flatMap({ units[$0] }), let value = Double(text.dropLast()), value >= 0 else {
                return nil
            }
            return value * unit
        }
    }

    /// `coffer appstore-sim family ACCOUNT...`.
    struct Family: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Put accounts in one family; their purchases from now on are shared.")
        @OptionGroup var remote: Remote
        @Argument(help: "The accounts.") var accounts: [String]
        func run() async throws { try await remote.control("family", ["accounts": accounts]) }
    }

    /// `coffer appstore-sim leave-family ACCOUNT`.
    struct LeaveFamily: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "leave-family", abstract: "Take an account out of its family (REVOKE).")
        @OptionGroup var remote: Remote
        @Argument(help: "The account.") var account: String
        func run() async throws { try await remote.control("leave-family", ["account": account]) }
    }

    /// `coffer appstore-sim history ACCOUNT`.
    struct History: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "An account's transactions, subscriptions and notifications with their delivery attempts.")
        @OptionGroup var remote: Remote
        @Argument(help: "The simulated account.") var account: String

        func run() async throws {
            let escaped = account.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? account
            let data = try await remote.send(.GET, "/simulator/history?account=\(escaped)")
            if remote.json {
                print(String(decoding: data, as: UTF8.self))
                return
            }
            let history = try AppleJSON.decode(SimulatorHistory.self, from: data)
            print("\(history.account) at \(history.clock.formatted(.iso8601))")
            print("transactions")
            for item in history.transactions {
                let revoked = item.revocationDate.map { "  refunded \($0.formatted(.iso8601))" } ?? ""
                let expires = item.expiresDate.map { "  until \($0.formatted(.iso8601))" } ?? ""
                print(
                    "  \(item.transactionId)  \(item.productId) ×\(item.quantity)  \(item.ownership.lowercased())"
                        + "\(expires)\(revoked)\(item.finished ? "" : "  unfinished")")
            }
            let states = [1: "active", 2: "expired", 3: "billing retry", 4: "grace period", 5: "revoked"]
            if !history.subscriptions.isEmpty { print("subscriptions") }
            for item in history.subscriptions {
                print(
                    "  \(item.originalTransactionId)  \(item.productId)  \(states[Int(item.status)] ?? "?")"
                        + "  auto-renew \(item.autoRenew ? "on" : "off")  until \(item.expiresDate.formatted(.iso8601))"
                )
            }
            print("notifications")
            for item in history.notifications {
                let attempts = item.attempts.isEmpty ? "not sent" : item.attempts.joined(separator: ", ")
                print("  \(item.type)  \(item.transactionId ?? "-")  \(attempts)")
            }
        }
    }

    /// `coffer appstore-sim signed ID`.
    struct Signed: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print a transaction as the device would post it (a signed JWS), e.g. for coffer verify.")
        @OptionGroup var action: TransactionAction
        func run() async throws {
            let data = try await action.remote.send(.GET, "/simulator/signed?transactionId=\(action.transactionId)")
            print(String(decoding: data, as: UTF8.self))
        }
    }

    /// `coffer appstore-sim receipt ACCOUNT`.
    struct Receipt: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print an account's app receipt (base64), for the simulator's verifyReceipt.")
        @OptionGroup var remote: Remote
        @Argument(help: "The simulated account.") var account: String
        func run() async throws {
            let escaped = account.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? account
            print(String(decoding: try await remote.send(.GET, "/simulator/receipt?account=\(escaped)"), as: UTF8.self))
        }
    }
}

extension AppStoreSimCommand.IdControl {
    /// Sends the control with the id.
    func run() async throws { try await action.remote.control(Self.control, [Self.field: action.transactionId]) }
}

extension JSONEncoder {
    fileprivate static var pretty: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        return encoder
    }
}
