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

/// The commands that drive a running simulator: purchases, refunds, renewals, the clock, family sharing and
/// what it holds.
extension AppStoreSimCommand {
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
            for id in report.transactionIds {
                if let order = report.orderIds[id] { print("order \(order): transaction \(id)") }
            }
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

    /// `coffer appstore-sim forge`.
    struct Forge: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Put a purchase StoreKit cannot verify (its payload changed after signing) on an account's devices."
        )
        @OptionGroup var remote: Remote
        @Option(help: "The simulated Apple account.") var account: String
        @Option(help: "The product id.") var product: String
        @Option(help: "Units.") var quantity = 1

        func run() async throws {
            try await remote.control("forge", ["account": account, "productId": product, "quantity": quantity])
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

    /// `coffer appstore-sim rate-limit ENDPOINT PER_HOUR`.
    struct RateLimit: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "rate-limit",
            abstract: "Limit an App Store Server API endpoint as Apple does: past it, 429 with Retry-After.",
            discussion: """
                Endpoints: transaction-info, transaction-history, refund-history, subscription-statuses, \
                notification-history, order-lookup, other. Counted per hour of the simulated clock; 0 removes the \
                limit. Apple's own limits are per second, enforced hourly (Get Refund History: 10/s, a tenth in the \
                sandbox).
                """)
        @OptionGroup var remote: Remote
        @Argument(help: "The endpoint.") var endpoint: String
        @Argument(help: "Requests an hour; 0 for no limit.") var perHour: Int
        func run() async throws { try await remote.control("rate-limit", ["endpoint": endpoint, "perHour": perHour]) }
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
                    "  \(item.transactionId)  order \(item.orderId)  \(item.productId) ×\(item.quantity)"
                        + "  \(item.ownership.lowercased())\(expires)\(revoked)\(item.finished ? "" : "  unfinished")")
                if let consumption = item.consumption {
                    print("    consumption information (v\(consumption.version)) \(consumption.describedForSupport)")
                }
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
